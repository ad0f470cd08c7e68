"""Speed-ups for moto's DynamoDB models, applied in the stand-in's process.

Profiling the stand-in through a 10,000-item run and through a restart on its state showed
per-call work that grows with what the tables hold, not with what a call asks:

- **An item's size, once.** moto builds an item's attributes in a dict that recomputes the
  size of every attribute already in it on each insert (quadratic in the attributes, each
  size a recursive walk) to refuse an item over 400 KB. The item is built, then its size
  is summed once; the same items are refused, with the same error.
- **No copies of what a Query or Scan returns.** moto deep-copies every item a Query or
  Scan returns (a Scan with ``Select=COUNT`` too) before handing it to the response, which
  only reads it: the copy protected nothing, since the stand-in serializes the whole
  answer under the state lock (``local/state_lock.py``), so no write can interleave.
  Table backups and restores, which need real copies, still get them.
- **An index Query reads one index partition.** moto answers a Query on a global
  secondary index by walking every item of the table, keeping those with the asked index
  key, sorting them all with its comparison objects and, for each page, walking them again
  to the page's start key: fan-out paging a 10,000-item dataset walked and sorted 10,000
  items per page of 100 (half the stand-in's CPU through a 10k run). The items of each
  index partition are now grouped once per table state (regrouped after any write to the
  table) and, when every sort key is a string, sorted by the strings (moto's order for
  strings) and cut at the page's start key; moto's own query code does the rest
  (conditions, filters, limits, the next page's key).
- **Parsed conditions, kept.** moto parses a condition or filter expression on every call;
  pawl sends the same few expressions again and again. Parsed trees are kept by their
  (expression, names, values) text, so a repeat with the same values reuses its tree.

Like the other patch modules, these replace moto internals and apply only to the release
they were written for (``local/moto_patches.PATCHED_MOTO_VERSION``);
``tests/integration/test_standin.py`` compares the stand-in's answers with plain moto's.
"""

from __future__ import annotations

import bisect
import copy
import functools
import json
from collections.abc import Callable
from typing import Any

#: Parsed condition/filter expressions kept (distinct texts; pawl sends a few dozen).
PARSED_EXPRESSIONS_KEPT = 4096
#: moto's limit on an item's size (DynamoDB's 400 KB, as moto measures it).
MOTO_ITEM_SIZE_LIMIT = 405000


def apply() -> None:
    """Install every patch; call after ``moto_server_patches``' one-partition Query."""
    _size_items_once()
    _return_stored_items_uncopied()
    _keep_parsed_expressions()
    _count_table_writes()
    _query_one_index_partition()


def _size_items_once() -> None:
    from moto.dynamodb.exceptions import ItemSizeTooLarge
    from moto.dynamodb.models.dynamo_type import DynamoType, Item, LimitedSizeDict
    from moto.dynamodb.models.utilities import bytesize

    def __init__(
        self: Any,
        hash_key: Any,
        range_key: Any,
        attrs: dict[str, Any],
    ) -> None:
        self.hash_key = hash_key
        self.range_key = range_key
        built = LimitedSizeDict.__new__(LimitedSizeDict)
        size = 0
        for key, value in attrs.items():
            typed = DynamoType(value)
            size += bytesize(key) + typed.size()
            dict.__setitem__(built, key, typed)
        # moto checks the running total on each insert; sizes are never negative, so the
        # total is over the limit exactly when some running total was.
        if size > MOTO_ITEM_SIZE_LIMIT:
            raise ItemSizeTooLarge
        self.attrs = built

    _replace(Item, "__init__", __init__)


class _CopyStoredItemsByReference:
    """moto's table module's ``copy``, except that an Item, or a list of Items, being
    returned by a Query or Scan is handed over as it is (see the module docstring)."""

    def __init__(self, item_class: type[Any]) -> None:
        self._item = item_class

    def deepcopy(self, value: Any, memo: Any = None) -> Any:
        if isinstance(value, self._item):
            return value
        if isinstance(value, list) and all(isinstance(v, self._item) for v in value):
            return list(value)
        return copy.deepcopy(value, memo)

    def __getattr__(self, name: str) -> Any:
        return getattr(copy, name)


def _return_stored_items_uncopied() -> None:
    import moto.dynamodb.models.table as table_module
    from moto.dynamodb.models.dynamo_type import Item

    _replace(table_module, "copy", _CopyStoredItemsByReference(Item))


def _keep_parsed_expressions() -> None:
    import moto.dynamodb.models as models
    import moto.dynamodb.models.table as table_module

    parse = _kept(models.get_filter_expression)
    _replace(models, "get_filter_expression", parse)
    _replace(table_module, "get_filter_expression", parse)


def _kept(parse: Callable[..., Any]) -> Callable[..., Any]:
    @functools.lru_cache(maxsize=PARSED_EXPRESSIONS_KEPT)
    def parse_text(expr: str | None, names: str, values: str) -> Any:
        return parse(expr, json.loads(names), json.loads(values))

    def get_filter_expression(expr: str | None, names: Any, values: Any) -> Any:
        if not expr:
            return parse(expr, names, values)
        try:
            key_names = json.dumps(names, sort_keys=True)
            key_values = json.dumps(values, sort_keys=True)
        except (TypeError, ValueError):  # not wire JSON: parse as moto does
            return parse(expr, names, values)
        return parse_text(expr, key_names, key_values)

    return get_filter_expression


def _replace(owner: Any, name: str, value: Any) -> None:
    if not hasattr(owner, name):  # a moto upgrade renamed what this module speeds up
        raise RuntimeError(f"moto has no {getattr(owner, '__name__', owner)}.{name} to patch")
    setattr(owner, name, value)


# --- index queries: one index partition --------------------------------------------------

_WRITES = "_pawl_writes"
_GROUPS = "_pawl_index_groups"


def _written(table: Any) -> None:
    table.__dict__[_WRITES] = table.__dict__.get(_WRITES, 0) + 1


def _count_table_writes() -> None:
    """Every way moto changes a table's items bumps the table's write count (updates
    change items in place, so a grouping cannot watch the items themselves)."""
    from moto.dynamodb.models import DynamoDBBackend
    from moto.dynamodb.models.table import Table

    for name in ("put_item", "delete_item"):
        _replace(Table, name, _counting(getattr(Table, name), lambda self, *_: self))
    update = DynamoDBBackend.update_item
    _replace(DynamoDBBackend, "update_item", _counting(update, _table_named))


def _table_named(backend: Any, table_name: str, *_: Any) -> Any:
    return backend.get_table(table_name)


def _counting(write: Callable[..., Any], table_of: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(write)
    def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return write(self, *args, **kwargs)
        finally:
            _written(table_of(self, *args))

    return counted


def _query_one_index_partition() -> None:
    from moto.dynamodb.models.table import Table

    table_query: Callable[..., Any] = Table.query

    def query(self: Any, hash_key: Any, *args: Any, **kwargs: Any) -> Any:
        view = _index_view(self, hash_key, args, kwargs)
        return table_query(view if view is not None else self, hash_key, *args, **kwargs)

    _replace(Table, "query", query)


#: Positions among Table.query's arguments after ``hash_key``.
_START_ARG, _FORWARD_ARG, _INDEX_ARG = 3, 4, 6


def _index_view(table: Any, hash_key: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The table as an index Query sees it, or None: not an index query of the simple
    shape (one hash key attribute, asked by equality), so moto answers it unchanged."""
    index_name = args[_INDEX_ARG] if len(args) > _INDEX_ARG else kwargs.get("index_name")
    if not index_name or hash_key is None:
        return None
    index = {i.name: i for i in table.all_indexes()}.get(index_name)
    if index is None:
        return None  # moto refuses it
    hashes = [k["AttributeName"] for k in index.schema if k["KeyType"] == "HASH"]
    conditions = kwargs.get("hash_key_conditions") or []
    if len(hashes) != 1 or [(n, v) for n, v in conditions] != [(hashes[0], hash_key)]:
        return None
    items = _index_groups(table, index_name, hashes[0]).get(hash_key, [])
    start = args[_START_ARG] if len(args) > _START_ARG else kwargs.get("exclusive_start_key")
    forward = args[_FORWARD_ARG] if len(args) > _FORWARD_ARG else True
    return _IndexPartition(table, items, start, forward is not False)


def _index_groups(table: Any, index_name: str, hash_attr: str) -> dict[Any, list[Any]]:
    writes = table.__dict__.get(_WRITES, 0)
    kept: dict[str, tuple[int, dict[Any, list[Any]]]] = table.__dict__.setdefault(_GROUPS, {})
    found = kept.get(index_name)
    if found is not None and found[0] == writes:
        return found[1]
    groups: dict[Any, list[Any]] = {}
    for item in table.all_items():
        value = item.attrs.get(hash_attr)
        if value is not None:
            groups.setdefault(value, []).append(item)
    kept[index_name] = (writes, groups)
    return groups


def _string_key(item: Any, attrs: list[str]) -> tuple[str, ...] | None:
    """The item's sort key as plain strings; None unless every attribute is a string."""
    key = []
    for name in attrs:
        value = item.attrs.get(name)
        if value is None or value.type != "S":
            return None
        key.append(value.value)
    return tuple(key)


class _IndexPartition:
    """The table as moto's index query sees it: ``all_items`` is one index partition;
    ``sorted_items`` sorts by plain strings when every sort key is one, and then also
    leaves out what precedes the page's start key (moto would walk past it item by item).
    Everything else is the table's."""

    def __init__(self, table: Any, items: list[Any], start: Any, forward: bool) -> None:
        self._table, self._items = table, items
        self._start, self._forward = start, forward

    def __getattr__(self, name: str) -> Any:
        return getattr(self._table, name)

    def all_items(self) -> list[Any]:
        return list(self._items)

    def sorted_items(
        self, hash_attrs: list[str], range_attrs: list[str | None], items: list[Any]
    ) -> list[Any]:
        attrs = self._table._generate_attr_to_sort_by(hash_attrs, range_attrs)
        keyed: list[tuple[tuple[str, ...], Any]] = []
        for item in items:
            key = _string_key(item, attrs)
            if key is None:
                return list(self._table.sorted_items(hash_attrs, range_attrs, items))
            keyed.append((key, item))
        keyed.sort(key=lambda pair: pair[0])
        keys = [key for key, _ in keyed]
        ordered = [item for _, item in keyed]
        start = self._start_key(attrs)
        if start is None:
            return ordered
        # moto reverses a backward page after sorting, then skips to just past the start.
        if self._forward:
            return ordered[bisect.bisect_right(keys, start) :]
        return ordered[: bisect.bisect_left(keys, start)]

    def _start_key(self, attrs: list[str]) -> tuple[str, ...] | None:
        if not self._start:
            return None
        key = []
        for name in attrs:
            value = self._start.get(name)
            if not isinstance(value, dict) or set(value) != {"S"}:
                return None
            key.append(value["S"])
        return tuple(key)
