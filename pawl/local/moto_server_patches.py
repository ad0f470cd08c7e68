"""Speed-ups for moto's HTTP server, applied in the stand-in's process.

Profiling the local runtime showed the stand-in, not pawl, spending most of each run:
moto re-derives on every request what never changes while a server runs, and its SQS
model recomputes whole-queue figures per message. Each patch below keeps moto's answers
exactly and removes only repeated work; ``tests/integration/test_standin.py`` runs the
same calls through the patched stand-in and through plain moto's server in a process
that applies no patch. Only the stand-in's own process
(:mod:`pawl.local.standin_process`) applies these.

They replace moto internals, so like ``moto_patches`` they apply only to the moto release
they were written for (:data:`pawl.local.moto_patches.PATCHED_MOTO_VERSION`); with
another, the stand-in runs plain moto, slower. The lock that keeps DynamoDB calls one at a
time (and orders them with the journal) is not among them: see ``local/state_lock.py``.

Figures (before/after) are in ``docs/local-runtime.md``.
"""

from __future__ import annotations

import functools
import os
import string
import time
from collections.abc import Callable
from typing import Any

from pawl.local import moto_dynamodb_patches
from pawl.local.moto_patches import moto_is_known

_applied = False
#: moto's (and SQS's documented maximum) receipt handle length.
RECEIPT_HANDLE_LENGTH = 185


def apply() -> bool:
    """Install every patch (idempotent); False, and nothing patched, on an unknown moto."""
    global _applied
    if _applied:
        return True
    if not moto_is_known():
        return False
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication

    dispatcher = DomainDispatcherApplication
    _replace(dispatcher, "get_backend_for_host", _memoized(dispatcher.get_backend_for_host))
    _cache_handler_methods()
    _serialize_attribute_values_directly()
    _query_one_partition()
    _compare_strings_directly()
    _speed_up_sqs()
    moto_dynamodb_patches.apply()
    _applied = True
    return True


def front(moto_app: Callable[..., Any]) -> Callable[..., Any]:
    """moto's WSGI application behind :class:`JsonProtocolFront` once the patches are
    applied; moto's application itself otherwise (the front calls moto internals too)."""
    return JsonProtocolFront(moto_app) if _applied else moto_app


def _replace(owner: Any, name: str, value: Any) -> None:
    if not hasattr(owner, name):  # a moto upgrade renamed what this module speeds up
        raise RuntimeError(f"moto has no {getattr(owner, '__name__', owner)}.{name} to patch")
    setattr(owner, name, value)


def _memoized(find_backend: Callable[[Any, str | None], Any]) -> Callable[[Any, str | None], Any]:
    # moto lists its package directory (about 150 stat calls) and tries every service's URL
    # patterns on each request, under a lock every request takes; a host always maps to
    # the same backend, and a server sees a handful of hosts.
    found: dict[str | None, Any] = {}

    def get_backend_for_host(self: Any, host: str | None) -> Any:
        if host not in found:
            found[host] = find_backend(self, host)
        return found[host]

    return get_backend_for_host


def _cache_handler_methods() -> None:
    # moto finds out whether a handler class has a method for the action by listing the
    # class's members with inspect.getmembers on every request (~60 isfunction calls); a
    # class's methods do not change while the server runs.
    import moto.core.responses as responses

    list_methods = responses.method_names_from_class

    @functools.cache
    def method_names_from_class(clazz: object) -> frozenset[str]:
        return frozenset(list_methods(clazz))

    _replace(responses, "method_names_from_class", method_names_from_class)


class JsonProtocolFront:
    """A WSGI front that hands JSON-protocol DynamoDB and SQS calls straight to moto's handler.

    moto's server routes every request through a Flask app per service (URL map, request
    and app contexts, CORS hooks) only to call the service's ``dispatch``; for calls that
    name their operation in ``X-Amz-Target`` the service is known from the header, so this
    calls ``dispatch`` with the same request moto's Flask view builds. Anything else goes
    to moto's own application.
    """

    def __init__(self, fallback: Callable[..., Any]) -> None:
        from moto.dynamodb.responses import DynamoHandler
        from moto.sqs.responses import SQSResponse

        self.fallback = fallback
        self.handlers: dict[str, Callable[..., Any]] = {
            "DynamoDB_20120810": DynamoHandler.dispatch,
            "AmazonSQS": SQSResponse.dispatch,
        }

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        from botocore.exceptions import ClientError
        from moto.moto_server.werkzeug_app import BackendRequest
        from werkzeug.wrappers import Response

        service = environ.get("HTTP_X_AMZ_TARGET", "").split(".", 1)[0]
        handler = self.handlers.get(service)
        if handler is None or environ.get("PATH_INFO", "/") != "/":
            return self.fallback(environ, start_response)
        request = BackendRequest(environ)
        try:
            status, headers, body = handler(request, request.raw_url, dict(request.headers))
        except ClientError as exc:  # as moto's Flask view answers it
            status, headers, body = 400, {}, exc.response["Error"]["Message"]
        return Response(response=body, status=status, headers=headers)(environ, start_response)


# --- DynamoDB items ----------------------------------------------------------------------

#: AttributeValue members whose JSON form is a string / a list of strings.
_STRING_TYPES = {"S", "N"}
_STRING_SET_TYPES = {"SS", "NS"}


def _serialize_attribute_values_directly() -> None:
    # moto serializes a response by walking its botocore shape, asking an attribute picker
    # for each of the ten possible members of every AttributeValue: ~3 ms per returned
    # item, so a 100-item Query page cost ~300 ms. An AttributeValue is already in wire
    # form ({type: value}); writing it out directly gives the same JSON.
    from moto.core.serialize import BaseJSONSerializer

    walk_structure = BaseJSONSerializer._serialize_type_structure

    def _serialize_type_structure(
        self: Any, serialized: Any, value: Any, shape: Any, key: str
    ) -> None:
        if key and shape.name == "AttributeValue":
            wire = _attribute_value(self, value)
            if wire is not None:
                self._default_serialize(serialized, wire, shape, key)
                return
        walk_structure(self, serialized, value, shape, key)

    _replace(BaseJSONSerializer, "_serialize_type_structure", _serialize_type_structure)


def _attribute_value(serializer: Any, value: Any) -> dict[str, Any] | None:
    """``value`` in DynamoDB JSON exactly as moto's walk writes it; None: not one we know."""
    if not isinstance(value, dict) or len(value) != 1:
        return None
    ((kind, inner),) = value.items()
    if inner is None:
        return None
    if kind in _STRING_TYPES:
        return {kind: inner if inner in ("", {}, []) else str(inner)}
    if kind in _STRING_SET_TYPES:
        return {kind: [str(x) for x in inner]}
    if kind == "B":
        return {kind: serializer._base64(inner)}
    if kind == "BS":
        return {kind: [serializer._base64(x) for x in inner]}
    if kind in ("BOOL", "NULL"):
        return {kind: inner}
    if kind == "M":
        members = {name: _attribute_value(serializer, member) for name, member in inner.items()}
        return None if any(m is None for m in members.values()) else {kind: members}
    if kind == "L":
        items = [_attribute_value(serializer, member) for member in inner]
        return None if any(i is None for i in items) else {kind: items}
    return None


def _query_one_partition() -> None:
    # moto answers a Query on a table by walking every item of the table and keeping the
    # ones with the asked hash key: reading one run's results cost as much as reading all
    # runs' results, and the local runtime keeps them all. The table's items are already
    # grouped by hash key; a query on the table (not an index) now sees only its partition.
    # Paging made it quadratic too: for every page moto walked the partition from its
    # start, testing each item against the page's start key; the partition handed to it
    # now begins after that key.
    from moto.dynamodb.models.table import Table

    query_items: Callable[..., Any] = Table.query

    @functools.wraps(query_items)  # moto_dynamodb_patches reaches moto's query beneath
    def query(self: Any, hash_key: Any, *args: Any, **kwargs: Any) -> Any:
        index_name = args[QUERY_INDEX_ARG] if len(args) > QUERY_INDEX_ARG else None
        if index_name or kwargs.get("index_name") or hash_key is None:
            return query_items(self, hash_key, *args, **kwargs)
        start = args[QUERY_START_ARG] if len(args) > QUERY_START_ARG else None
        forward = args[QUERY_FORWARD_ARG] if len(args) > QUERY_FORWARD_ARG else True
        partition = _OnePartition(self, hash_key, start, forward is not False)
        return query_items(partition, hash_key, *args, **kwargs)

    _replace(Table, "query", query)


#: Positions among Table.query's arguments after ``hash_key``.
QUERY_START_ARG = 3  # exclusive_start_key
QUERY_FORWARD_ARG = 4  # scan_index_forward
QUERY_INDEX_ARG = 6  # index_name


class _OnePartition:
    """The table as moto's query sees it: ``all_items`` is one hash key's items, and only
    those past the page's start key in the query's direction."""

    def __init__(self, table: Any, hash_key: Any, start: Any, forward: bool) -> None:
        self._table = table
        self._hash_key = hash_key
        self._start = start
        self._forward = forward

    def __getattr__(self, name: str) -> Any:
        return getattr(self._table, name)

    def all_items(self) -> list[Any]:
        from moto.dynamodb.models.dynamo_type import DynamoType

        found = self._table.items.get(self._hash_key)
        if found is None:
            return []
        range_attr = self._table.range_key_attr
        if not range_attr:
            return [found]
        items = list(found.values())
        if not self._start or range_attr not in self._start:
            return items
        after = DynamoType(self._start[range_attr])
        if self._forward:
            return [item for item in items if item.range_key > after]
        return [item for item in items if item.range_key < after]


def _compare_strings_directly() -> None:
    # Every key comparison moto makes (finding a partition, sorting a query's items,
    # skipping to a page's start) reads DynamoType.cast_value, which asks five type
    # questions before returning a string attribute unchanged; keys here are strings.
    from moto.dynamodb.models.dynamo_type import DynamoType

    cast = DynamoType.cast_value.fget  # type: ignore[attr-defined]

    def cast_value(self: Any) -> Any:
        return self.value if self.type == "S" else cast(self)

    _replace(DynamoType, "cast_value", property(cast_value))


# --- SQS ---------------------------------------------------------------------------------


def _now_ms() -> float:
    # moto's SQS clock is datetime arithmetic (~15 us a reading) so that tests can freeze
    # it; nothing freezes the stand-in's process, and time.time() is the same instant.
    return time.time() * 1000.0


def _speed_up_sqs() -> None:
    import moto.sqs.models as sqs

    exact_unix_time = sqs.unix_time

    def unix_time(dt: Any = None) -> float:
        return _now_ms() / 1000.0 if dt is None else float(exact_unix_time(dt))

    def unix_time_millis(dt: Any = None) -> float:
        return _now_ms() if dt is None else float(exact_unix_time(dt)) * 1000.0

    _replace(sqs, "unix_time", unix_time)
    _replace(sqs, "unix_time_millis", unix_time_millis)
    # 185 random.choice calls per received message; the same shape (185 lowercase
    # letters, unique) from one os.urandom call.
    _replace(sqs, "generate_receipt_handle", _receipt_handle)
    # Reading a queue's attributes converts each of ~14 names from CamelCase character by
    # character, every time (each SendMessage reads them); the names are a fixed set.
    _replace(sqs, "camelcase_to_underscores", functools.cache(sqs.camelcase_to_underscores))
    queue = sqs.Queue
    # Every count below read the clock twice per queued message, and the queue's
    # attributes (which SendMessage reads for one flag) take all three counts: sending
    # into a queue of n messages cost O(n) clock readings per message. One reading per
    # call, compared against the same fields moto's properties compare.
    _replace(queue, "messages", property(_visible_messages))
    _replace(queue, "approximate_number_of_messages", property(_count_visible))
    _replace(queue, "approximate_number_of_messages_delayed", property(_count_delayed))
    _replace(queue, "approximate_number_of_messages_not_visible", property(_count_not_visible))
    _replace(queue, "delete_message", _delete_message)
    # moto computed the queue's whole attribute map (three O(n) counts) three times per
    # received message to read one integer.
    _replace(sqs.SQSBackend, "is_message_valid_based_on_retention_period", _within_retention)


def _receipt_handle() -> str:
    letters = string.ascii_lowercase
    return "".join(letters[byte % 26] for byte in os.urandom(RECEIPT_HANDLE_LENGTH))


def _visible_messages(queue: Any) -> list[Any]:
    now = _now_ms()
    return [m for m in queue._messages if now > m.visible_at and not now < m.delayed_until]


def _count_visible(queue: Any) -> int:
    return len(_visible_messages(queue))


def _count_delayed(queue: Any) -> int:
    now = _now_ms()
    return sum(1 for m in queue._messages if now < m.delayed_until)


def _count_not_visible(queue: Any) -> int:
    now = _now_ms()
    return sum(1 for m in queue._messages if not now > m.visible_at)


def _delete_message(queue: Any, receipt_handle: str) -> None:
    from moto.sqs.exceptions import ReceiptHandleIsInvalid

    if receipt_handle in queue.deleted_messages:
        return  # already deleted: SQS accepts deleting again
    messages = queue._messages
    index = next(
        (
            i
            for i, m in enumerate(messages)
            if m.receipt_handle == receipt_handle or receipt_handle in m._old_receipt_handles
        ),
        None,
    )
    if index is None:
        raise ReceiptHandleIsInvalid()
    message = messages[index]
    queue.pending_messages.discard(message)
    queue.deleted_messages.update(message.all_receipt_handles)
    # A new list rather than removal in place: a receive on another thread may be iterating
    # the old one (moto rebinds the list too).
    queue._messages = messages[:index] + messages[index + 1 :]


def _within_retention(backend: Any, queue_name: str, message: Any) -> bool:
    retention_s = int(backend.get_queue(queue_name).message_retention_period)
    return bool(retention_s + message.sent_timestamp / 1000 > _now_ms() / 1000)
