"""Corrections to moto that both the local runtime's stand-in and the test suite need.

- **TransactWriteItems, faster with the same semantics.** moto backs up a transaction by
  deep-copying every table it touches, once per operation, so a transaction costs
  O(table size): recording a 1,000-item run's results slowed to about one transaction
  per second. This version checks every condition against the state before the
  transaction, then applies the operations, backing up only the items it writes
  (restored if an apply step fails). DynamoDB forbids two operations on one item in a
  transaction, so checking all conditions first is exactly all-or-nothing.
- **ReceiveMessage, one receiver per queue at a time.** moto marks messages received
  without a lock, so two concurrent receives could both return the same message; SQS
  hands a message to one receiver per visibility timeout. Receives of one queue now take
  turns (a long poll waiting on an empty queue holds its turn until a message arrives or
  the wait ends, as the other receivers would find nothing either).

Applied by the local runtime's stand-in and by the test suite, so both run the same code.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable
from typing import Any

_OP_TYPES = {"ConditionCheck", "Put", "Delete", "Update"}
_applied = False


def apply() -> None:
    """Install the patch (idempotent)."""
    global _applied
    if _applied:
        return
    from moto.dynamodb.models import DynamoDBBackend
    from moto.sqs.models import SQSBackend

    DynamoDBBackend.transact_write_items = _transact_write_items  # type: ignore[method-assign]
    SQSBackend.receive_message = _taking_turns(SQSBackend.receive_message)  # type: ignore[method-assign]
    _applied = True


def _taking_turns(receive: Callable[..., Any]) -> Callable[..., Any]:
    turns: dict[tuple[int, str], threading.Lock] = {}
    turns_guard = threading.Lock()

    def receive_message(self: Any, queue_name: str, *args: Any, **kwargs: Any) -> Any:
        with turns_guard:
            turn = turns.setdefault((id(self), queue_name), threading.Lock())
        with turn:
            return receive(self, queue_name, *args, **kwargs)

    return receive_message


def _key_of(backend: Any, op_type: str, op: dict[str, Any]) -> dict[str, Any]:
    if op_type != "Put":
        key: dict[str, Any] = op["Key"]
        return key
    attrs = op["Item"]
    table = backend.get_table(op["TableName"])
    key = {table.hash_key_attr: attrs[table.hash_key_attr]}
    if table.range_key_attr is not None:
        key[table.range_key_attr] = attrs[table.range_key_attr]
    return key


def _parse(backend: Any, transact_items: list[dict[str, Any]]) -> list[tuple[str, dict, dict]]:
    from moto.dynamodb.exceptions import (
        MultipleTransactionsException,
        TooManyTransactionsException,
        TransactWriteSingleOpException,
    )

    if len(transact_items) > 100:
        raise TooManyTransactionsException()
    parsed, seen = [], set()
    for item in transact_items:
        if len(item) > 1:
            raise TransactWriteSingleOpException
        op_type, op = next(iter(item.items()))
        if op_type not in _OP_TYPES:
            raise ValueError("Unsupported transaction operation")
        key = _key_of(backend, op_type, op)
        identity = (str(op["TableName"]), str(dict(sorted(key.items()))))
        if identity in seen:
            raise MultipleTransactionsException()
        seen.add(identity)
        parsed.append((op_type, op, key))
    return parsed


def _check(backend: Any, op: dict[str, Any], key: dict[str, Any]) -> tuple[Any, Any, Any]:
    """(code, message, old item) of an operation's condition against the current state."""
    from moto.dynamodb.comparisons import get_filter_expression
    from moto.dynamodb.exceptions import ConditionalCheckFailed

    condition = op.get("ConditionExpression")
    try:
        current = backend.get_item(op["TableName"], key)
        if condition is None:
            return (None, None, None)
        expr = get_filter_expression(
            condition, op.get("ExpressionAttributeNames"), op.get("ExpressionAttributeValues")
        )
        if expr.expr(current):
            return (None, None, None)
    except Exception as exc:
        return (type(exc).__name__, str(exc), None)
    old = None
    if op.get("ReturnValuesOnConditionCheckFailure") == "ALL_OLD" and current:
        old = current.to_json()["Attributes"]
    return ("ConditionalCheckFailed", ConditionalCheckFailed().message, old)


def _write(backend: Any, op_type: str, op: dict[str, Any], key: dict[str, Any]) -> None:
    table_name = op["TableName"]
    condition = {
        "condition_expression": op.get("ConditionExpression"),
        "expression_attribute_names": op.get("ExpressionAttributeNames"),
        "expression_attribute_values": op.get("ExpressionAttributeValues"),
    }
    if op_type == "Put":
        backend.put_item(table_name, op["Item"], **condition)
    elif op_type == "Delete":
        backend.delete_item(table_name, key, **condition)
    elif op_type == "Update":
        backend.update_item(table_name, key, update_expression=op["UpdateExpression"], **condition)


def _restore(backend: Any, backups: list[tuple[str, dict, dict | None]]) -> None:
    for table_name, key, attrs in reversed(backups):
        if attrs is None:
            backend.delete_item(table_name, key)
        else:
            backend.put_item(table_name, attrs)


def _transact_write_items(self: Any, transact_items: list[dict[str, Any]]) -> None:
    from moto.dynamodb.exceptions import TransactionCanceledException

    parsed = _parse(self, transact_items)
    errors = [_check(self, op, key) for _, op, key in parsed]
    if any(code is not None for code, _, _ in errors):
        raise TransactionCanceledException(errors)
    backups: list[tuple[str, dict, dict | None]] = []
    for index, (op_type, op, key) in enumerate(parsed):
        if op_type == "ConditionCheck":
            continue
        current = self.get_item(op["TableName"], key)
        attrs = copy.deepcopy(current.to_json()["Attributes"]) if current else None
        backups.append((op["TableName"], key, attrs))
        try:
            _write(self, op_type, op, key)
        except Exception as exc:
            _restore(self, backups)
            failed: list[Any] = [(None, None, None)] * len(parsed)
            failed[index] = (type(exc).__name__, str(exc), None)
            raise TransactionCanceledException(failed) from exc
