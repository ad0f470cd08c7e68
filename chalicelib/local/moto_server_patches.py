"""Speed-ups and one safety lock for moto's HTTP server, applied in the stand-in's process.

Profiling the local runtime showed the stand-in, not pawl, spending most of each run:
moto re-derives on every request what never changes while a server runs, and its SQS
model recomputes whole-queue figures per message. Each patch below keeps moto's answers
exactly and removes only repeated work; ``tests/integration/test_standin.py`` runs the
same calls through the patched stand-in and through plain in-process moto. Only the stand-in's own process applies these
(:mod:`chalicelib.local.standin_process`); the test suite's in-process moto does not need
them.

Figures (before/after) are in ``docs/local-runtime.md``.
"""

from __future__ import annotations

import functools
import os
import string
import threading
import time
from collections.abc import Callable
from typing import Any

_applied = False
#: moto's (and SQS's documented maximum) receipt handle length.
RECEIPT_HANDLE_LENGTH = 185


def apply() -> None:
    """Install every patch (idempotent)."""
    global _applied
    if _applied:
        return
    from moto.dynamodb.responses import DynamoHandler
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication

    dispatcher = DomainDispatcherApplication
    _replace(dispatcher, "get_backend_for_host", _memoized(dispatcher.get_backend_for_host))
    _replace(DynamoHandler, "call_action", _serialized(DynamoHandler.call_action))
    _cache_handler_methods()
    _serialize_attribute_values_directly()
    _speed_up_sqs()
    _applied = True


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


def _serialized(call_action: Callable[[Any], Any]) -> Callable[[Any], Any]:
    # moto's DynamoDB backend is not safe under concurrent requests (a transaction iterating
    # a table while another request writes it raises "dictionary changed size during
    # iteration"); one request at a time costs little since they share one GIL anyway.
    lock = threading.Lock()

    def locked_call_action(self: Any) -> Any:
        with lock:
            return call_action(self)

    return locked_call_action


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
    matching = [
        m
        for m in queue._messages
        if m.receipt_handle == receipt_handle or receipt_handle in m._old_receipt_handles
    ]
    if not matching:
        raise ReceiptHandleIsInvalid()
    for message in matching:
        queue.pending_messages.discard(message)
        queue.deleted_messages.update(message.all_receipt_handles)
    gone = {id(m) for m in matching}
    queue._messages = [m for m in queue._messages if id(m) not in gone]


def _within_retention(backend: Any, queue_name: str, message: Any) -> bool:
    retention_s = int(backend.get_queue(queue_name).message_retention_period)
    return bool(retention_s + message.sent_timestamp / 1000 > _now_ms() / 1000)
