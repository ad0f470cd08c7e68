"""The one definition of pawl's tables, queues and bucket.

Tables come from the PynamoDB models (keys, attributes, GSIs, a TTL attribute if a model
declares one); queues from the names in settings plus the timings below. The local
runtime (:mod:`chalicelib.bootstrap`) and the deployed stack (:mod:`.template`) both read
these, so they cannot drift.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pynamodb.attributes import TTLAttribute

from chalicelib.settings import Settings, get_settings
from chalicelib.store.base import registered_models

#: Receives before SQS moves a message to its DLQ (the item worker's last delivery records
#: an error instead of failing again, see ``workers/queues.py``).
MAX_RECEIVE_COUNT = 5
#: SQS wants a visibility timeout of at least 6x the consuming function's timeout, so a
#: message is not redelivered while a slow (or retried) invocation still holds it.
VISIBILITY_FACTOR = 6
#: The API Lambda: API Gateway cuts a REST integration at 29 s.
API_TIMEOUT_S = 30
#: Seconds a message may wait in a work queue before the "oldest message" alarm fires.
OLDEST_MESSAGE_ALARM_S = 900


@dataclass(frozen=True)
class QueueSpec:
    """One work queue, its DLQ, and the Lambda that consumes it."""

    role: str  # "runs", "items", "webhooks": which setting names it
    name: str
    #: The consuming Lambda's timeout. Items and fan-out may settle a whole run inline
    #: (the last recorded item claims the settle), so they get Lambda's maximum.
    function_timeout_s: int
    #: Lambda's ScalingConfig.MaximumConcurrency for the event source mapping (2..1000).
    max_concurrency: int

    @property
    def dlq_name(self) -> str:
        return f"{self.name}-dlq"

    @property
    def visibility_timeout_s(self) -> int:
        return VISIBILITY_FACTOR * self.function_timeout_s

    @property
    def max_receive_count(self) -> int:
        return MAX_RECEIVE_COUNT


@dataclass(frozen=True)
class TableSpec:
    """One DynamoDB table as the model declares it (botocore / CloudFormation casing)."""

    short_name: str
    name: str
    key_schema: list[dict[str, str]]
    attribute_definitions: list[dict[str, str]]
    global_secondary_indexes: list[dict[str, Any]]
    ttl_attribute: str | None


def queue_specs(settings: Settings | None = None) -> list[QueueSpec]:
    settings = settings or get_settings()
    return [
        QueueSpec("runs", settings.run_queue, function_timeout_s=900, max_concurrency=5),
        QueueSpec(
            "items",
            settings.item_queue,
            function_timeout_s=900,
            max_concurrency=settings.items_max_concurrency,
        ),
        QueueSpec("webhooks", settings.webhook_queue, function_timeout_s=120, max_concurrency=10),
    ]


def _hash_first(key_schema: list[dict[str, str]]) -> list[dict[str, str]]:
    # DynamoDB wants HASH before RANGE; PynamoDB lists index keys in declaration order.
    return sorted(
        ({"AttributeName": k["AttributeName"], "KeyType": k["KeyType"]} for k in key_schema),
        key=lambda k: k["KeyType"] != "HASH",
    )


def _ttl_attribute(model: Any) -> str | None:
    for name, attribute in model.get_attributes().items():
        if isinstance(attribute, TTLAttribute):
            return str(attribute.attr_name or name)
    return None


def table_spec(model: Any, settings: Settings | None = None) -> TableSpec:
    """The table ``model`` needs, read from PynamoDB's own schema of it."""
    settings = settings or get_settings()
    schema = model._get_schema()
    indexes = [
        {
            "IndexName": index["index_name"],
            "KeySchema": _hash_first(index["key_schema"]),
            "Projection": dict(index["projection"]),
        }
        for index in sorted(schema["global_secondary_indexes"], key=lambda i: i["index_name"])
    ]
    attributes = sorted(
        (dict(a) for a in schema["attribute_definitions"]), key=lambda a: a["AttributeName"]
    )
    return TableSpec(
        short_name=model.Meta.short_name,
        name=settings.table_name(model.Meta.short_name),
        key_schema=_hash_first(schema["key_schema"]),
        attribute_definitions=attributes,
        global_secondary_indexes=indexes,
        ttl_attribute=_ttl_attribute(model),
    )


def table_specs(settings: Settings | None = None) -> list[TableSpec]:
    return [table_spec(model, settings) for model in registered_models()]
