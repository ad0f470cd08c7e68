"""Table binding and transactions shared by every model.

Table names are ``<prefix>-<name>`` from settings. Models declare only their short
name (``Meta.short_name``); :func:`bind` fills in the real name, region and endpoint,
so the same classes serve moto in-process, a moto server and real AWS. The tables
themselves are created from :mod:`chalicelib.infra.definitions` (``chalicelib.bootstrap``).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any, TypeVar

import pynamodb
from pynamodb.attributes import UnicodeAttribute
from pynamodb.connection import Connection
from pynamodb.exceptions import UpdateError
from pynamodb.expressions.condition import Condition
from pynamodb.expressions.operand import Path, Value
from pynamodb.expressions.update import Action, SetAction
from pynamodb.models import Model
from pynamodb.transactions import TransactWrite

from chalicelib.settings import get_settings
from chalicelib.store import direct_json, item_size

#: The ``cause_response_code`` of a single-item write whose condition did not hold.
CONDITION_FAILED = "ConditionalCheckFailedException"
_REGISTRY: list[type[Model]] = []
_bound_for: tuple[str, str, str | None] | None = None
_shared: Connection | None = None
_lock = threading.Lock()
#: See :func:`serialized_writes`; re-entrant because a guarded write may nest another.
_write_lock = threading.RLock()

M = TypeVar("M", bound=type[Model])

#: The PynamoDB release :meth:`PawlModel._get_connection` was written against. It
#: overrides that private classmethod (PynamoDB has no public hook to bind tables lazily
#: and share one connection, which cross-table transactions use), so any other release
#: is refused at import rather than mis-wired silently: re-check the override, then bump
#: this with the pin in ``pyproject.toml`` (``tests/unit/test_private_overrides.py``).
SUPPORTED_PYNAMODB = "6.1.0"


def check_pynamodb(installed: str = pynamodb.__version__) -> None:
    """Refuse a PynamoDB other than :data:`SUPPORTED_PYNAMODB`, or one without the
    ``Model._get_connection`` classmethod the override relies on."""
    if installed != SUPPORTED_PYNAMODB:
        raise RuntimeError(
            f"pynamodb {installed} is installed, but pawl's store overrides its private "
            f"Model._get_connection as written for pynamodb {SUPPORTED_PYNAMODB}: "
            "install that release (pyproject.toml pins it)"
        )
    if not isinstance(Model.__dict__.get("_get_connection"), classmethod):
        raise RuntimeError("pynamodb's Model._get_connection is gone: the store cannot bind")


check_pynamodb()


def register(model: M) -> M:
    """Class decorator: make ``model`` part of the schema (bound here, created by bootstrap)."""
    _REGISTRY.append(model)
    return model


#: The modules that declare tables, in the order their tables are listed (definitions,
#: generated policies): fixed here, not by which module some entry point imported first.
_MODEL_MODULES = (
    "chalicelib.store.models",
    "chalicelib.store.formation_models",
    "chalicelib.store.usage_models",
)


def registered_models() -> list[type[Model]]:
    _import_all_models()

    def module_rank(model: type[Model]) -> int:
        module = model.__module__
        return _MODEL_MODULES.index(module) if module in _MODEL_MODULES else len(_MODEL_MODULES)

    return sorted(_REGISTRY, key=module_rank)  # stable: declaration order within a module


def _import_all_models() -> None:
    # Imported for their @register side effect; kept here so bind() sees every table.
    from chalicelib.store import formation_models, models, usage_models  # noqa: F401


def bind(force: bool = False) -> None:
    """Point every model at the tables of the current settings (idempotent)."""
    global _bound_for, _shared
    settings = get_settings()
    key = (settings.table_prefix, settings.region, settings.aws_endpoint_url)
    if _bound_for == key and not force:
        return
    with _lock:
        for model in registered_models():
            meta: Any = model.Meta
            meta.table_name = settings.table_name(meta.short_name)
            meta.region = settings.region
            meta.host = settings.aws_endpoint_url
            meta.connect_timeout_seconds = 5
            meta.read_timeout_seconds = 30
            meta.max_retry_attempts = 5
            # A cached connection would keep talking to the previous endpoint.
            model._connection = None
            for index in model._indexes.values():
                index._connection = None  # type: ignore[attr-defined]
        _shared = None
        _bound_for = key


def connection() -> Connection:
    """The one DynamoDB connection of this process (per endpoint).

    PynamoDB would otherwise build a botocore session and client per model, per thread
    and per transaction — about half a second each. A botocore client is thread-safe
    once created, so every model and every transaction shares this one.
    """
    global _shared
    shared = _shared
    if shared is None:
        with _lock:
            if _shared is None:
                settings = get_settings()
                conn = Connection(
                    region=settings.region,
                    host=settings.aws_endpoint_url,
                    connect_timeout_seconds=5,
                    read_timeout_seconds=30,
                    max_retry_attempts=5,
                    max_pool_connections=64,
                )
                direct_json.install(conn.client)  # creates the client once, under the lock
                _shared = conn
            shared = _shared
    return shared


def serialized_writes() -> AbstractContextManager[Any]:
    """Hold while writing when this process's writes must go one at a time.

    DynamoDB isolates transactions and conditional writes itself, and so does the local
    runtime's stand-in (its server takes DynamoDB calls one at a time). moto *in-process*
    (the test suite) does not: a transaction applied step by step while another thread
    writes the same table can fail with "dictionary changed size during iteration". With
    ``PAWL_SERIALIZE_TRANSACTIONS`` (the test suite sets it) writes are serialized here;
    otherwise this is a no-op, so a worker's threads never wait on each other's round trips.
    """
    return _write_lock if get_settings().serialize_transactions else nullcontext()


@contextmanager
def transaction() -> Iterator[TransactWrite]:
    """A TransactWrite on the shared connection; committed when the block exits."""
    bind()
    with serialized_writes(), TransactWrite(connection=connection()) as txn:
        yield txn


def transact_write(
    puts: list[dict[str, Any]], updates: list[dict[str, Any]], token: str | None = None
) -> None:
    """A TransactWriteItems of operations already built (``get_save_kwargs_from_instance``,
    ``get_update_kwargs_from_instance``), puts before updates, as :func:`transaction` sends
    them: a caller that serialized its rows once (to measure them) does not again. Raises
    PynamoDB's ``TransactWriteError`` with the cancellation reasons, in that order.
    ``token``: the ClientRequestToken (DynamoDB applies a retried request with the same
    token once, for ten minutes)."""
    bind()
    with serialized_writes():
        connection().transact_write_items(
            condition_check_items=[],
            delete_items=[],
            put_items=puts,
            update_items=updates,
            client_request_token=token,
        )


class PawlModel(Model):
    """Base for every table: binds lazily before the first call; measures every write.

    Puts (``save``, transactions, batch writes) all serialize through :meth:`serialize`;
    updates go through :meth:`update` or, in a transaction,
    :meth:`get_update_kwargs_from_instance`. Each measures the item it would leave and
    refuses one over DynamoDB's limit before anything is sent (see :mod:`.item_size`).
    """

    class Meta:
        short_name = "unset"
        billing_mode = "PAY_PER_REQUEST"

    def serialize(self, null_check: bool = True) -> dict[str, dict[str, Any]]:
        attributes: dict[str, dict[str, Any]] = super().serialize(null_check=null_check)
        item_size.check_item(attributes, self._decoded)
        return attributes

    def update(self, actions: list[Any], condition: Any = None, **kwargs: Any) -> Any:
        self._check_update(actions)
        return super().update(actions, condition, **kwargs)

    def update_if(self, actions: list[Any], condition: Any) -> bool:
        """Apply ``actions`` when ``condition`` holds; False (nothing written) when it does not."""
        try:
            self.update(actions=actions, condition=condition)
        except UpdateError as exc:
            if exc.cause_response_code == CONDITION_FAILED:
                return False
            raise
        return True

    def get_update_kwargs_from_instance(
        self,
        actions: list[Action],
        condition: Condition | None = None,
        return_values_on_condition_failure: str | None = None,
        *,
        add_version_condition: bool = True,
    ) -> dict[str, Any]:
        self._check_update(actions)
        return super().get_update_kwargs_from_instance(
            actions,
            condition,
            return_values_on_condition_failure,
            add_version_condition=add_version_condition,
        )

    def _decoded(self) -> dict[str, Any]:
        return {a.attr_name: getattr(self, name) for name, a in self.get_attributes().items()}

    def _check_update(self, actions: list[Any]) -> None:
        attributes = super().serialize(null_check=False)
        new_values: dict[str, dict[str, Any]] = {}
        for action in actions:
            if not isinstance(action, SetAction):
                continue
            path, value = action.values
            if not isinstance(path, Path) or len(path.path) != 1 or not isinstance(value, Value):
                continue
            new_values[path.path[0]] = value.values[0]
        attributes.update(new_values)

        def decoded() -> dict[str, Any]:
            return {**self._decoded(), **{k: _decode(v) for k, v in new_values.items()}}

        item_size.check_item(attributes, decoded)

    @classmethod
    def _get_connection(cls) -> Any:
        bind()
        table_connection = super()._get_connection()
        shared = connection()
        if table_connection.connection is not shared:
            meta = table_connection.connection._tables.get(table_connection.table_name)
            if meta is not None and meta.table_name not in shared._tables:
                shared.add_meta_table(meta)
            table_connection.connection = shared
        return table_connection


def _decode(value: dict[str, Any]) -> Any:
    """A set value as Python, for naming the field: JSON attributes are JSON strings."""
    ((kind, raw),) = value.items()
    if kind == "S":
        try:
            return json.loads(raw)
        except ValueError:
            return raw
    return raw


class IdModel(PawlModel):
    """A table keyed by the resource's public id."""

    id = UnicodeAttribute(hash_key=True)
