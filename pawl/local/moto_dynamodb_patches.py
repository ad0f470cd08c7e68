"""Speed-ups for moto's DynamoDB models, applied in the stand-in's process.

Profiling the stand-in through a 10,000-item run and through a restart on its state showed
per-call work that grows with what the tables hold, not with what a call asks:

- **Repeated values, shared.** An item's short scalar values and its attribute names are
  shared with the items stored before it (``local/moto_shared_values.py``): result rows
  repeat most of theirs, and they were most of the stand-in's memory.
- **An item's size, once.** moto builds an item's attributes in a dict that recomputes the
  size of every attribute already in it on each insert (quadratic in the attributes, each
  size a recursive walk) to refuse an item over 400 KB. The item is built, then its size
  is summed once; the same items are refused, with the same error.
- **No copies of what a Query or Scan returns.** moto deep-copies every item a Query or
  Scan returns (a Scan with ``Select=COUNT`` too) before handing it to the response, which
  only reads it: the copy protected nothing, since the stand-in serializes the whole
  answer under the state lock (``local/state_lock.py``), so no write can interleave.
  Table backups and restores, which need real copies, still get them.
- **A Query page reads its page.** moto answers a Query on a global secondary index by
  walking every item of the table, keeping those with the asked index key, sorting them
  all and walking them again to the page's start key; a table Query sorts its whole hash
  partition per page. Index partitions are now grouped once per table state (regrouped
  after any write to the table), each asked partition (index or table) is kept sorted by
  its string sort keys until the next write, and a page hands moto only the stretch it
  can reach (``local/moto_query_pages.py``: a bisect to the start key and to the range
  condition's bound, then the limit); moto's own query code does the rest.
- **A projection picks attributes.** moto projects each item a Query, GetItem or
  BatchGetItem returns (``ProjectionExpression``) by turning the whole item into plain
  Python values and the picked ones back into DynamoDB's (about half of what a settle's
  Query pages and label reads cost the stand-in). A projection of top-level names whose
  values survive that round trip unchanged (strings, booleans, nulls, numbers already in
  the serializer's form: everything pawl stores) now takes those attributes as they are;
  any other projection goes moto's way.
- **Items are not tracked.** moto keeps every model object it ever builds in a class-wide
  list (for its ``/moto-api/data.json`` dump, which pawl never calls): every stored item,
  and every projected copy a read returns, stayed in memory until the stand-in exited.
  DynamoDB items are no longer listed there, so what a read builds is freed after it.
- **A Query measures each item once.** moto sums an item's size (a walk of every attribute)
  twice for each item a Query page takes, to stop the page at 1 MB, and the page's bound
  (``local/moto_query_pages.py``) once more: 41 % of a settle's Query in the stand-in. An
  item's size is kept with it, stamped with its table's write count, for the Queries of
  that table state: a write to the table (an update changes items in place) makes every
  kept size stale.
- **Parsed conditions, kept.** moto parses a condition or filter expression on every call;
  pawl sends the same few expressions again and again. Parsed trees are kept by their
  (expression, names, values) text, so a repeat with the same values reuses its tree.

Like the other patch modules, these replace moto internals and apply only to the release
they were written for (``local/moto_patches.PATCHED_MOTO_VERSION``);
``tests/integration/test_standin.py`` compares the stand-in's answers with plain moto's.
"""

from __future__ import annotations

import copy
import functools
import json
import threading
from collections.abc import Callable
from typing import Any

from pawl.local import moto_query_pages as pages
from pawl.local import moto_shared_values as shared

#: Parsed condition/filter expressions kept (distinct texts; pawl sends a few dozen).
PARSED_EXPRESSIONS_KEPT = 4096
#: moto's limit on an item's size (DynamoDB's 400 KB, as moto measures it).
MOTO_ITEM_SIZE_LIMIT = pages.MOTO_ITEM_SIZE_LIMIT


def apply() -> None:
    """Install every patch; call after ``moto_server_patches``' one-partition Query."""
    _size_items_once()
    _untrack_items()
    _project_names_directly()
    _return_stored_items_uncopied()
    _keep_parsed_expressions()
    _count_table_writes()
    _measure_once_per_table_state()
    _query_sorted_pages()


def _size_items_once() -> None:
    from moto.dynamodb.exceptions import ItemSizeTooLarge
    from moto.dynamodb.models.dynamo_type import DynamoType, Item, LimitedSizeDict
    from moto.dynamodb.models.utilities import bytesize

    values = shared.SharedValues(DynamoType)

    def __init__(
        self: Any,
        hash_key: Any,
        range_key: Any,
        attrs: dict[str, Any],
    ) -> None:
        self.hash_key = values.share(hash_key)
        self.range_key = values.share(range_key)
        built = LimitedSizeDict.__new__(LimitedSizeDict)
        size = 0
        for key, value in attrs.items():
            typed = values.typed(value)
            size += bytesize(key) + typed.size()
            dict.__setitem__(built, shared.attribute_name(key), typed)
        # moto checks the running total on each insert; sizes are never negative, so the
        # total is over the limit exactly when some running total was.
        if size > MOTO_ITEM_SIZE_LIMIT:
            raise ItemSizeTooLarge
        self.attrs = built

    _replace(Item, "__init__", __init__)


def _untrack_items() -> None:
    from moto.dynamodb.models.dynamo_type import Item

    def untracked(cls: type[Any], *_: Any, **__: Any) -> Any:
        return object.__new__(cls)

    _replace(Item, "__new__", staticmethod(untracked))


#: Types whose values moto's projection round trip (to plain Python and back) leaves as is.
_ROUND_TRIP_AS_IS = frozenset({"S", "BOOL", "NULL"})


def _project_names_directly() -> None:
    from boto3.dynamodb.types import DYNAMODB_CONTEXT
    from moto.dynamodb.models.dynamo_type import Item

    project = Item.project

    def unchanged(value: Any) -> bool:
        if value.type in _ROUND_TRIP_AS_IS:
            return True
        return (
            value.type == "N" and str(DYNAMODB_CONTEXT.create_decimal(value.value)) == value.value
        )

    @functools.wraps(project)
    def projected(self: Any, projection_expressions: list[list[str]]) -> Any:
        names = _top_level_names(projection_expressions)
        stored = self.attrs
        picked = [(n, stored[n]) for n in names or () if n in stored]
        if names is None or not all(unchanged(value) for _, value in picked):
            return project(self, projection_expressions)
        result = Item(self.hash_key, self.range_key, {})
        for name, value in picked:  # shared, like the uncopied Query items below
            dict.__setitem__(result.attrs, name, value)
        return result

    _replace(Item, "project", projected)


def _top_level_names(expressions: list[list[str]]) -> list[str] | None:
    """The attribute names a projection picks, or None when some path goes deeper."""
    names: dict[str, None] = {}
    for path in expressions:
        if len(path) != 1 or "[" in path[0]:
            return None
        names[path[0]] = None
    return list(names)


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


# --- queries: a sorted partition, cut to the page -----------------------------------

_WRITES = "_pawl_writes"
_GROUPS = "_pawl_index_groups"


def written(table: Any) -> None:
    """Note that the table's items changed (what a Query page reads is sorted anew)."""
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
            written(table_of(self, *args))

    return counted


_SIZE = "_pawl_size"
#: The table state a Query of this thread reads: (table id, its write count), else None.
_querying = threading.local()


def _table_state(table: Any) -> tuple[int, int]:
    return id(table), table.__dict__.get(_WRITES, 0)


def _measure_once_per_table_state() -> None:
    from moto.dynamodb.models.dynamo_type import Item

    measure = Item.size

    def size(self: Any) -> int:
        state = getattr(_querying, "state", None)
        if state is None:
            return int(measure(self))
        kept = self.__dict__.get(_SIZE)
        if kept is not None and kept[0] == state:
            return int(kept[1])
        measured = int(measure(self))
        self.__dict__[_SIZE] = (state, measured)
        return measured

    _replace(Item, "size", size)


def _query_sorted_pages() -> None:
    from moto.dynamodb.models.table import Table

    table_query: Callable[..., Any] = Table.query  # moto_server_patches': one partition
    moto_query = pages.moto_query_of(table_query)

    @functools.wraps(table_query)
    def query(self: Any, hash_key: Any, *args: Any, **kwargs: Any) -> Any:
        _querying.state = _table_state(self)
        try:
            return paged_query(self, hash_key, *args, **kwargs)
        finally:
            _querying.state = None

    def paged_query(self: Any, hash_key: Any, *args: Any, **kwargs: Any) -> Any:
        if hash_key is not None:
            index_name = args[_INDEX_ARG] if len(args) > _INDEX_ARG else kwargs.get("index_name")
            view = (
                _index_view(self, hash_key, index_name, args, kwargs)
                if index_name
                else _table_view(self, hash_key, args, kwargs)
            )
            if view is not None:
                return moto_query(view, hash_key, *args, **kwargs)
        return table_query(self, hash_key, *args, **kwargs)

    _replace(Table, "query", query)


#: Position of ``index_name`` among Table.query's arguments after ``hash_key``.
_INDEX_ARG = 6


def _index_view(
    table: Any, hash_key: Any, index_name: str, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> pages.PageView | None:
    """The table as an index Query's page sees it, or None: not an index query of the
    simple shape (one hash key attribute, asked by equality), so moto answers it unchanged."""
    index = {i.name: i for i in table.all_indexes()}.get(index_name)
    if index is None:
        return None  # moto refuses it
    hashes = [k["AttributeName"] for k in index.schema if k["KeyType"] == "HASH"]
    ranges = [k["AttributeName"] for k in index.schema if k["KeyType"] == "RANGE"]
    conditions = kwargs.get("hash_key_conditions") or []
    if len(hashes) != 1 or [(n, v) for n, v in conditions] != [(hashes[0], hash_key)]:
        return None
    group = _index_groups(table, index_name, hashes[0]).get(hash_key, [])
    range_conditions = kwargs.get("range_key_conditions") or []
    if len(ranges) != 1 or [c[0] for c in range_conditions] not in ([], ranges):
        return pages.PageView(table, group, ordered=False)  # moto filters and sorts it
    attrs = table._generate_attr_to_sort_by(
        [hashes[0], table.hash_key_attr], [ranges[0], table.range_key_attr]
    )
    # moto leaves out of an index the items without its range attribute, as DynamoDB does.
    part = pages.sorted_partition(
        table,
        table.__dict__.get(_WRITES, 0),
        ("index", index_name, hash_key),
        lambda: [item for item in group if item.attrs.get(ranges[0]) is not None],
        attrs,
    )
    if part is None:
        return pages.PageView(table, group, ordered=False)
    shape = pages.PageShape(args, kwargs, cond_attr=ranges[0])
    window = pages.page_items(part, shape, {hashes[0]})
    return pages.PageView(table, part.items if window is None else window, ordered=True)


def _table_view(
    table: Any, hash_key: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> pages.PageView | None:
    """The table as a Query's page on one hash key sees it, or None (moto_server_patches'
    one-partition Query answers it)."""
    range_attr = table.range_key_attr
    range_conditions = kwargs.get("range_key_conditions") or []
    if not range_attr or [c[0] for c in range_conditions] not in ([], [range_attr]):
        return None

    def partition() -> list[Any]:
        return list(table.items.get(hash_key, {}).values())

    attrs = table._generate_attr_to_sort_by([table.hash_key_attr], [range_attr])
    writes = table.__dict__.get(_WRITES, 0)
    part = pages.sorted_partition(table, writes, ("table", hash_key), partition, attrs)
    if part is None:
        return None
    window = pages.page_items(part, pages.PageShape(args, kwargs, cond_attr=range_attr), {attrs[0]})
    return None if window is None else pages.PageView(table, window, ordered=True)


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
