"""List windows over DynamoDB: an opaque cursor (O(page)), or SOAT's bounded ``offset``.

A list is read through a :class:`Window` (``limit`` plus a ``cursor`` *or* an ``offset``)
and answers a :class:`Listing`: the items, ``next_cursor``, and, when the window asks for
it, ``total`` and the listing's ``offset``. What each costs on DynamoDB
(``docs/dynamodb.md#list-windows``):

- a cursor page reads its own items only;
- an ``offset`` first reads the skipped rows' keys (at most :data:`MAX_OFFSET` of them);
- ``total`` is one ``Select=COUNT`` query over the partition (every row is read and billed,
  none transferred), taken once per listing: on its first page or offset request. The
  cursor then carries it, with the position, so later pages cost nothing more.

A cursor is signed: an HMAC (a key derived from the server secret, ``secretbox``) over the
list it belongs to (its *scope*: table or index, partition, direction, filter) and its
contents. A cursor a client made or changed, or one of another list or project, is a 400
before anything is read, so a client never chooses the key a page starts at, its offset
or the ``total`` it is told: every one of them is a value pawl computed.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from chalicelib import secretbox
from chalicelib.errors import ValidationFailed

D = TypeVar("D")
E = TypeVar("E")

#: The deepest ``offset`` served; past it a client pages with the cursor.
MAX_OFFSET = 10_000
_NUMBER = re.compile(r"-?[0-9]+(\.[0-9]+)?")
#: What a cursor's HMAC key is derived for (``secretbox.keyed_hash``'s purpose).
CURSOR_PURPOSE = "list-cursor"
#: Hex digits of the HMAC a cursor carries (128 bits).
CURSOR_MAC_CHARS = 32
#: The longest key value a cursor may hold (DynamoDB's sort key limit is 1,024 bytes).
MAX_KEY_VALUE_CHARS = 2048


@dataclass(frozen=True)
class Window:
    """Which page of a list to read: ``cursor`` and ``offset`` exclude each other."""

    limit: int = 50
    cursor: str | None = None
    offset: int = 0
    #: Count the whole list (``Listing.total``): the API's lists do, internal readers don't.
    counted: bool = False

    def __post_init__(self) -> None:
        check_window(self.cursor, self.offset or None)


def check_window(cursor: str | None, offset: int | None) -> None:
    """400 for a cursor with an offset (``offset`` None: not given), or one past the maximum."""
    if cursor and offset is not None:
        raise ValidationFailed(
            "give either cursor or offset, not both: next_cursor already holds the position",
            field="offset",
        )
    if offset is not None and offset > MAX_OFFSET:
        raise ValidationFailed(
            f"offset may be at most {MAX_OFFSET}: a deeper page costs a read of every row "
            "before it; page with cursor (each answer's next_cursor) instead",
            field="offset",
            max_offset=MAX_OFFSET,
        )


@dataclass(frozen=True)
class Listing(Generic[D]):
    """One page of a list and where it sits in the whole."""

    items: list[D]
    next_cursor: str | None
    limit: int
    #: How many items precede this page.
    offset: int
    #: Every item of the list (as counted when the listing began); None when not counted.
    total: int | None = None

    def map(self, convert: Callable[[D], E]) -> Listing[E]:
        """The same page with each item converted (a view of it, say)."""
        return Listing([convert(i) for i in self.items], *self._position())

    def with_items(self, items: list[E]) -> Listing[E]:
        return Listing(items, *self._position())

    def _position(self) -> tuple[str | None, int, int, int | None]:
        return self.next_cursor, self.limit, self.offset, self.total


class Source(Protocol):
    """What a list pages through: a key range it can read in order, and count."""

    @property
    def key_attrs(self) -> frozenset[str]:
        """The attributes of a row's key in the table and the index (a cursor's keys)."""

    @property
    def scope(self) -> str:
        """Which list this is (a cursor signed for one is refused by every other)."""

    def read(self, last_key: dict[str, Any] | None, n: int, keys_only: bool) -> Any:
        """A PynamoDB result iterator of at most ``n`` rows after ``last_key``."""

    def count(self) -> int:
        """How many rows the whole range holds."""


@dataclass(frozen=True)
class Partition:
    """One partition of a table or index (a model class or an index), in one direction."""

    target: Any
    hash_key: str
    key_attrs: frozenset[str]
    forward: bool = True
    consistent: bool = False
    #: A filter applied after the key range (rows it drops are still read and billed).
    only: Any = None
    #: A condition on the range key (``begins_with``): rows outside it are never read.
    within: Any = None
    #: The attributes a page reads (a ProjectionExpression; the keys are always read);
    #: None: every attribute the table or index holds.
    projected: frozenset[str] | None = None

    @property
    def scope(self) -> str:
        base = f"{_name_of(self.target)}|{self.hash_key}|{self.forward}|{self.only}"
        return base if self.within is None else f"{base}|{self.within}"

    def read(self, last_key: dict[str, Any] | None, n: int, keys_only: bool) -> Any:
        return self.target.query(
            self.hash_key,
            range_key_condition=self.within,
            limit=n,
            last_evaluated_key=last_key,
            scan_index_forward=self.forward,
            consistent_read=self.consistent,
            filter_condition=self.only,
            attributes_to_get=self._attributes(keys_only),
        )

    def _attributes(self, keys_only: bool) -> list[str] | None:
        if keys_only:
            return sorted(self.key_attrs)
        return None if self.projected is None else sorted(self.projected | self.key_attrs)

    def count(self) -> int:
        return int(
            self.target.count(
                self.hash_key,
                range_key_condition=self.within,
                filter_condition=self.only,
                consistent_read=self.consistent,
            )
        )


@dataclass(frozen=True)
class TableScan:
    """A whole table, in DynamoDB's order (the admin's list of projects)."""

    model: Any
    key_attrs: frozenset[str]

    @property
    def scope(self) -> str:
        return f"scan|{_name_of(self.model)}"

    def read(self, last_key: dict[str, Any] | None, n: int, keys_only: bool) -> Any:
        attributes = sorted(self.key_attrs) if keys_only else None
        return self.model.scan(limit=n, last_evaluated_key=last_key, attributes_to_get=attributes)

    def count(self) -> int:
        # A scan's COUNT is not exposed by PynamoDB: read the keys only.
        return sum(1 for _ in self.model.scan(attributes_to_get=sorted(self.key_attrs)))


def _name_of(target: Any) -> str:
    """A model class's name, or an index's with its model's (the same in every process)."""
    model = getattr(target, "_model", None)  # an index: its model, set by PynamoDB
    if model is not None:
        return f"{model.__name__}.{target.Meta.index_name}"
    return str(getattr(target, "__name__", None) or type(target).__name__)


def page_of(
    source: Source,
    window: Window,
    convert: Callable[[Any], D],
    known_total: int | None = None,
) -> Listing[D]:
    """One window of ``source``: skip ``offset`` rows (keys only), then read ``limit``.

    DynamoDB may return fewer items than asked with a next key; reading continues until
    the page is full or the range is exhausted, so a page is never short without being the
    last one. ``known_total``: how many rows the source holds, kept by the caller (a
    counter written with the rows); a counted window then reads no COUNT.
    """

    def count() -> int:
        return source.count() if known_total is None else known_total

    position = decode_cursor(window.cursor, source.key_attrs, source.scope)
    if position is not None and position.total is None and window.counted:
        # A cursor from a reader that did not count: count now, once.
        position = Position(position.last_key, position.offset, count())
    if position is None:
        total = count() if window.counted else None
        position = Position(None, 0, total)
        if window.offset:
            skipped, last_key = _read(source, None, window.offset, keys_only=True)
            position = Position(last_key, len(skipped), total)
            if last_key is None:  # past the end: an empty page at the offset asked for
                return Listing([], None, window.limit, window.offset, total)
    rows, last_key = _read(source, position.last_key, window.limit, keys_only=False)
    after = Position(last_key, position.offset + len(rows), position.total)
    return Listing(
        [convert(row) for row in rows],
        encode_cursor(after, source.scope),
        window.limit,
        position.offset,
        position.total,
    )


def listing_of(items: Sequence[D], window: Window, scope: str) -> Listing[D]:
    """A window over a list already in memory (a scoped key's project, a formation by name);
    ``scope`` names the list, as :attr:`Source.scope` does."""
    position = decode_cursor(window.cursor, frozenset(), scope)
    start = position.offset if position is not None else window.offset
    end = start + window.limit
    total = len(items) if window.counted else None
    more = Position({}, end, total) if end < len(items) else None
    return Listing(list(items[start:end]), encode_cursor(more, scope), window.limit, start, total)


def _read(
    source: Source, last_key: dict[str, Any] | None, wanted: int, *, keys_only: bool
) -> tuple[list[Any], dict[str, Any] | None]:
    rows: list[Any] = []
    while True:
        result = source.read(last_key, wanted - len(rows), keys_only)
        rows.extend(result)
        last_key = result.last_evaluated_key
        if last_key is None or len(rows) >= wanted:
            return rows, last_key


# --- cursors ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Position:
    """What a cursor holds: the last key read, how many items precede it, the total."""

    last_key: dict[str, Any] | None
    offset: int
    total: int | None


def encode_cursor(position: Position | None, scope: str) -> str | None:
    if position is None or position.last_key is None:
        return None
    return pack_cursor({"k": position.last_key, "o": position.offset, "t": position.total}, scope)


def pack_cursor(value: dict[str, Any], scope: str) -> str:
    """A cursor's JSON ``value`` as the opaque, URL-safe, signed string clients pass back."""
    raw = json.dumps(value, separators=(",", ":"), sort_keys=True).encode()
    payload = base64.urlsafe_b64encode(raw).decode().rstrip("=")
    return f"{payload}.{_mac(scope, payload)}"


def unpack_cursor(cursor: str, scope: str) -> Any:
    """The JSON value :func:`pack_cursor` packed for ``scope``; anything else is a 400."""
    payload, _, mac = cursor.rpartition(".")
    if not payload or not hmac.compare_digest(mac.encode(), _mac(scope, payload).encode()):
        raise malformed_cursor()
    try:
        padded = payload + "=" * (-len(payload) % 4)
        return json.loads(base64.urlsafe_b64decode(padded.encode()))
    except (ValueError, binascii.Error, UnicodeDecodeError) as exc:
        raise malformed_cursor() from exc


def _mac(scope: str, payload: str) -> str:
    # The scope and the payload cannot run into each other: a payload is base64 (no "\n").
    digest = secretbox.keyed_hash(CURSOR_PURPOSE, f"{scope}\n{payload}")
    return digest.partition(".")[2][:CURSOR_MAC_CHARS]


def decode_cursor(cursor: str | None, expected_keys: frozenset[str], scope: str) -> Position | None:
    """Decode a cursor :func:`encode_cursor` made for ``scope``; anything else is a 400.

    The signature already rules out a forged cursor; the shape is checked as well, so a
    cursor made by an older pawl (or under a leaked server secret) still cannot hand the
    store a key value of the wrong type.
    """
    if cursor is None or cursor == "":
        return None
    value = unpack_cursor(cursor, scope)
    if not isinstance(value, dict) or set(value) != {"k", "o", "t"}:
        raise malformed_cursor()
    last_key, offset, total = value["k"], value["o"], value["t"]
    if not (is_count(offset) and (total is None or is_count(total))):
        raise malformed_cursor()
    if not isinstance(last_key, dict) or set(last_key) != expected_keys:
        raise malformed_cursor()
    if not all(is_key_value(attr) for attr in last_key.values()):
        raise malformed_cursor()
    return Position(last_key, offset, total)


def is_key_value(attr: Any) -> bool:
    """A DynamoDB key attribute value as a cursor may hold it: ``{"S": text}`` or
    ``{"N": "digits"}``."""
    if not (isinstance(attr, dict) and len(attr) == 1):
        return False
    kind, value = next(iter(attr.items()))
    if not isinstance(value, str) or not 0 < len(value) <= MAX_KEY_VALUE_CHARS:
        return False
    return kind == "S" or (kind == "N" and _is_number(value))


def _is_number(text: str) -> bool:
    return _NUMBER.fullmatch(text) is not None


def is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def malformed_cursor() -> ValidationFailed:
    return ValidationFailed("cursor is malformed", field="cursor")
