"""Measure an item the way DynamoDB does, before writing it; refuse one over 400 KB.

DynamoDB refuses an item over 400 KB only when the write reaches it, as an error the
HTTP edge could not tell from any other failure (a 500). Every write of a
:class:`~chalicelib.store.base.PawlModel` is measured here first: a put measures the item
it sends; an update measures the item as this process last held it with the update's
new values set (a lower bound when the instance was not loaded; the rows updated that
way are counters, never free-form content). An oversized item is a 400
``VALIDATION_FAILED`` naming the field that holds the most bytes — down to the largest
leaf inside a JSON attribute (``metadata.notes``, ``scorers.0.value``) — with the measured
size and the limit.

Sizes follow DynamoDB's published rules: attribute names and strings count their UTF-8
bytes, binary its bytes, numbers about one byte per two significant digits plus one,
booleans and nulls one byte, and a map or list three bytes plus one per element.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from chalicelib.errors import ValidationFailed

#: DynamoDB's maximum item size, attribute names included.
ITEM_LIMIT_BYTES = 400 * 1024


def value_size(value: dict[str, Any]) -> int:
    """Bytes DynamoDB counts for one serialized AttributeValue (``{"S": "..."}``, ...)."""
    ((kind, raw),) = value.items()
    if kind == "S":
        return len(raw.encode("utf-8"))
    if kind == "N":
        return _number_size(raw)
    if kind == "B":
        return len(raw)
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "L":
        return 3 + sum(1 + value_size(v) for v in raw)
    if kind == "M":
        return 3 + sum(1 + len(k.encode("utf-8")) + value_size(v) for k, v in raw.items())
    if kind == "SS":
        return sum(len(s.encode("utf-8")) for s in raw)
    if kind == "NS":
        return sum(_number_size(n) for n in raw)
    if kind == "BS":
        return sum(len(b) for b in raw)
    raise ValueError(f"unknown DynamoDB attribute type {kind}")


def item_size(attributes: dict[str, dict[str, Any]]) -> int:
    return sum(len(name.encode("utf-8")) + value_size(v) for name, v in attributes.items())


def _number_size(raw: str) -> int:
    mantissa = re.split("[eE]", raw, maxsplit=1)[0].replace(".", "").lstrip("-+")
    digits = len(mantissa.strip("0")) or 1
    return (digits + 1) // 2 + 1


def check_item(
    attributes: dict[str, dict[str, Any]], decoded: Callable[[], dict[str, Any]]
) -> None:
    """Refuse ``attributes`` (serialized) over the limit.

    ``decoded()`` maps attribute names to their Python values; it is called only for an
    oversized item, to name the largest leaf of the largest attribute.
    """
    size = item_size(attributes)
    if size <= ITEM_LIMIT_BYTES:
        return
    largest = max(attributes, key=lambda name: value_size(attributes[name]))
    field = _largest_leaf(decoded().get(largest), largest)
    raise too_large(field, size, ITEM_LIMIT_BYTES)


def largest_field(values: dict[str, Any]) -> str:
    """The dotted path of the biggest leaf among ``values`` (field name -> value)."""
    return _largest_leaf(values, "").lstrip(".")


def too_large(field: str, size: int, limit: int) -> ValidationFailed:
    return ValidationFailed(
        f"{field} makes the record {size} bytes; at most {limit} bytes are stored "
        "(DynamoDB counts attribute names and values; its item limit is 400 KB)",
        field=field,
        size_bytes=size,
        limit_bytes=limit,
    )


def _largest_leaf(value: Any, path: str) -> str:
    """The dotted path of the biggest leaf below ``value`` (iterative: any depth)."""
    while True:
        if isinstance(value, dict) and value:
            key = max(value, key=lambda k: _encoded_len(value[k]))
            path, value = f"{path}.{key}", value[key]
        elif isinstance(value, list) and value:
            index = max(range(len(value)), key=lambda i: _encoded_len(value[i]))
            path, value = f"{path}.{index}", value[index]
        else:
            return path


def _encoded_len(value: Any) -> int:
    return len(json.dumps(value, default=str, ensure_ascii=False).encode("utf-8", "replace"))
