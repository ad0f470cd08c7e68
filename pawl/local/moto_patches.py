"""Corrections to moto that both the local runtime's stand-in and the test suite need.

- **TransactWriteItems, faster with the same answers.** moto backs up a transaction by
  deep-copying every table it touches, once per operation, so a transaction costs
  O(table size): recording a 1,000-item run's results slowed to about one transaction
  per second. This version runs moto's own loop (each operation's condition, then its
  write, in order; a ValidationException rejects the whole request, any other failure is
  that operation's cancellation reason) but backs up only the items it writes, restored
  when the transaction is rejected or cancelled. The one deliberate difference: an item
  naming two operations is refused before anything is written (moto had applied the
  operations before it).
- **BatchExecuteStatement's INSERTs, as DynamoDB runs them.** moto runs every PartiQL
  statement by converting every item of every table to JSON (a statement costs O(all
  data)), and its INSERT overwrites an existing item where DynamoDB refuses it with a
  ``DuplicateItem`` error. pawl records results with batches of
  ``INSERT INTO "<table>" VALUE {'<attr>': ?, ...}`` (``store/conditional_puts.py``); a
  statement of exactly that form is now a put conditioned on the item's key not existing,
  its refusal that statement's ``DuplicateItem`` error. Any other statement goes to moto.
- **ReceiveMessage, one receiver per queue at a time.** moto marks messages received
  without a lock, so two concurrent receives could both return the same message; SQS
  hands a message to one receiver per visibility timeout. Receives of one queue now take
  turns (a long poll waiting on an empty queue holds its turn until a message arrives or
  the wait ends, as the other receivers would find nothing either).

Both replace moto internals, so they are written for one moto release
(:data:`PATCHED_MOTO_VERSION`, the version pinned in ``pyproject.toml``). With any other
moto installed, :func:`apply` logs a warning and patches nothing: plain moto runs, slower
(a transaction copies its tables) and with concurrent receives of one queue able to return
one message twice. ``tests/integration/test_standin.py`` compares the patched
TransactWriteItems with plain moto in a process that never applies these.

Applied by the local runtime's stand-in and by the test suite, so both run the same code.
"""

from __future__ import annotations

import copy
import logging
import re
import threading
import time
from collections.abc import Callable
from typing import Any

import moto

log = logging.getLogger("pawl.local")

#: The moto release every patch here and in ``moto_server_patches`` was written against.
PATCHED_MOTO_VERSION = "5.2.5"
#: The moto release this process imported (read once, at import).
INSTALLED_MOTO_VERSION: str = moto.__version__

_OP_TYPES = {"ConditionCheck", "Put", "Delete", "Update"}
_applied = False
_warned = False

#: (code, message, old item) of one operation: (None, None, None) when it succeeded.
Outcome = tuple[Any, Any, Any]
#: (table name, key, attributes before the write; None: the item did not exist).
Backup = tuple[str, dict[str, Any], dict[str, Any] | None]


def moto_is_known() -> bool:
    """Whether the installed moto is the release the patches were written for; warns once
    (naming what running without them costs) when it is not."""
    global _warned
    if INSTALLED_MOTO_VERSION == PATCHED_MOTO_VERSION:
        return True
    if not _warned:
        _warned = True
        log.warning(
            "moto %s is installed but pawl's moto patches were written for moto %s: "
            "running plain moto (TransactWriteItems copies whole tables, concurrent receives "
            "of one queue may return one message twice, the stand-in's speed-ups are off)",
            INSTALLED_MOTO_VERSION,
            PATCHED_MOTO_VERSION,
        )
    return False


def apply() -> bool:
    """Install the patches (idempotent); False, and nothing patched, on an unknown moto."""
    global _applied
    if _applied:
        return True
    if not moto_is_known():
        return False
    from moto.dynamodb.models import DynamoDBBackend
    from moto.sqs.models import SQSBackend

    DynamoDBBackend.transact_write_items = _transact_write_items  # type: ignore[method-assign]
    DynamoDBBackend.batch_execute_statement = _inserting(DynamoDBBackend.batch_execute_statement)  # type: ignore[method-assign]
    SQSBackend.receive_message = _taking_turns(SQSBackend.receive_message)  # type: ignore[method-assign]
    _applied = True
    return True


#: The one PartiQL statement form answered here: an INSERT of named parameters.
_INSERT = re.compile(r'\s*INSERT\s+INTO\s+"([^"]+)"\s+VALUE\s+\{(.*)\}\s*', re.S | re.I)
_PARAMETER = re.compile(r"'([^']+)'\s*:\s*\?")


def _inserting(batch: Callable[..., Any]) -> Callable[..., Any]:
    def batch_execute_statement(self: Any, statements: list[dict[str, Any]]) -> Any:
        parsed = [_insert_of(statement) for statement in statements]
        if any(p is None for p in parsed):
            return batch(self, statements)
        return [_insert(self, table, item) for table, item in parsed]  # type: ignore[misc]

    return batch_execute_statement


def _insert_of(statement: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """(table, item) of an ``INSERT INTO "t" VALUE {'a': ?, ...}`` statement, else None."""
    match = _INSERT.fullmatch(statement.get("Statement", ""))
    if match is None:
        return None
    names = _PARAMETER.findall(match.group(2))
    values = statement.get("Parameters", [])
    if len(names) != len(values) or len(names) != match.group(2).count("?"):
        return None
    return match.group(1), dict(zip(names, values, strict=True))


def _insert(backend: Any, table_name: str, item: dict[str, Any]) -> dict[str, Any]:
    from moto.dynamodb.exceptions import ConditionalCheckFailed, ResourceNotFoundException

    try:
        table = backend.get_table(table_name)
    except ResourceNotFoundException:
        return {"Error": {"Code": "ResourceNotFound", "Message": "Requested resource not found"}}
    try:
        backend.put_item(
            table_name,
            item,
            condition_expression="attribute_not_exists(#k)",
            expression_attribute_names={"#k": table.hash_key_attr},
        )
    except ConditionalCheckFailed:
        return {
            "TableName": table_name,
            "Error": {
                "Code": "DuplicateItem",
                "Message": "Duplicate primary key exists in table",
            },
        }
    return {"TableName": table_name}


def _taking_turns(receive: Callable[..., Any]) -> Callable[..., Any]:
    turns: dict[tuple[int, str], threading.Lock] = {}
    turns_guard = threading.Lock()

    def receive_message(
        self: Any,
        queue_name: str,
        count: int,
        wait_seconds_timeout: float,
        *args: Any,
        **kwargs: Any,
    ) -> Any:
        with turns_guard:
            turn = turns.setdefault((id(self), queue_name), threading.Lock())
        # A receiver waits for its turn only as long as its own long poll: when the wait
        # ends first it finds nothing, as SQS would answer. Without the bound, N receivers
        # of an empty queue answer one poll after another (a stop waited N long polls).
        started = time.monotonic()
        if not turn.acquire(timeout=wait_seconds_timeout or -1):
            return []
        try:
            left = max(0.0, wait_seconds_timeout - (time.monotonic() - started))
            if wait_seconds_timeout and not left:
                return []
            return receive(self, queue_name, count, left, *args, **kwargs)
        finally:
            turn.release()

    return receive_message


def _transact_write_items(self: Any, transact_items: list[dict[str, Any]]) -> None:
    from moto.dynamodb.exceptions import (
        MockValidationException,
        TooManyTransactionsException,
        TransactionCanceledException,
        TransactWriteSingleOpException,
    )

    if len(transact_items) > 100:
        raise TooManyTransactionsException()
    if any(len(item) > 1 for item in transact_items):
        raise TransactWriteSingleOpException
    claimed: set[tuple[str, str]] = set()
    backups: list[Backup] = []
    try:
        outcomes = [_run_operation(self, item, claimed, backups) for item in transact_items]
    except MockValidationException:  # the request is malformed: rejected as a whole
        _restore(self, backups)
        raise
    if any(code is not None for code, _, _ in outcomes):
        _restore(self, backups)
        raise TransactionCanceledException(outcomes)


def _run_operation(
    backend: Any, item: dict[str, Any], claimed: set[tuple[str, str]], backups: list[Backup]
) -> Outcome:
    """One operation as moto's loop runs it: its condition, then its write (backed up).

    A ValidationException propagates (it rejects the request); any other failure is this
    operation's cancellation reason, as moto reports it."""
    from moto.dynamodb.comparisons import get_filter_expression
    from moto.dynamodb.exceptions import (
        ConditionalCheckFailed,
        MockValidationException,
        MultipleTransactionsException,
    )

    try:
        op_type, op = next(iter(item.items()))
        if op_type not in _OP_TYPES:
            raise ValueError("Unsupported transaction operation")
        table_name = op["TableName"]
        key = _key_of(backend, op_type, op)
        identity = (str(table_name), str(dict(sorted(key.items()))))
        if identity in claimed:
            raise MultipleTransactionsException()
        claimed.add(identity)
        current = backend.get_item(table_name, key)
        condition = op.get("ConditionExpression")
        if condition is not None:
            names, values = op.get("ExpressionAttributeNames"), op.get("ExpressionAttributeValues")
            if not get_filter_expression(condition, names, values).expr(current):
                old = None
                if op.get("ReturnValuesOnConditionCheckFailure") == "ALL_OLD" and current:
                    old = current.to_json()["Attributes"]
                return ("ConditionalCheckFailed", ConditionalCheckFailed().message, old)
        if op_type != "ConditionCheck":
            attrs = copy.deepcopy(current.to_json()["Attributes"]) if current else None
            backups.append((table_name, key, attrs))
            _write(backend, op_type, op, key)
    except MockValidationException:
        raise
    except ConditionalCheckFailed as failed:  # the write's own check (moto checks twice)
        return ("ConditionalCheckFailed", str(failed.message), None)
    except Exception as exc:
        return (type(exc).__name__, str(exc), None)
    return (None, None, None)


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


def _restore(backend: Any, backups: list[Backup]) -> None:
    for table_name, key, attrs in reversed(backups):
        if attrs is None:
            backend.delete_item(table_name, key)
        else:
            backend.put_item(table_name, attrs)
