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
from collections.abc import Callable
from typing import Any

#: Parsed condition/filter expressions kept (distinct texts; pawl sends a few dozen).
PARSED_EXPRESSIONS_KEPT = 4096
#: moto's limit on an item's size (DynamoDB's 400 KB, as moto measures it).
MOTO_ITEM_SIZE_LIMIT = 405000


def apply() -> None:
    _size_items_once()
    _return_stored_items_uncopied()
    _keep_parsed_expressions()


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
