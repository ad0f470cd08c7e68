"""Items that share value objects in the stand-in still change one at a time.

The stand-in stores an item's short scalar values as objects shared with the items
stored before it (``local/moto_shared_values.py``). That is only right if no write to
one item can change another: here twin items are written with the same values, then one
of them is changed in every way DynamoDB allows (SET, ADD, arithmetic, REMOVE, nested
map and list updates, set ADD/DELETE, a transaction, a refused condition), and both
twins, read back, must be exactly what plain moto (its own server, nothing patched) holds.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from pawl.local import moto_shared_values as shared
from tests.support.plain_moto import standin_and_plain_dynamodb

pytestmark = pytest.mark.slow

TABLE = "twins"
VALUES: dict[str, Any] = {
    "s": {"S": "the same text"},
    "n": {"N": "1"},
    "b": {"BOOL": True},
    "z": {"NULL": True},
    "m": {"M": {"k": {"S": "the same text"}, "n": {"N": "1"}}},
    "l": {"L": [{"S": "the same text"}, {"N": "1"}]},
    "ss": {"SS": ["a", "b"]},
    "ns": {"NS": ["1", "2"]},
    "txt": {"S": "x" * (shared.SHARED_MAX_CHARS + 1)},
}
#: One update of twin ``a`` per way an item can change (expression, names, values).
UPDATES: list[tuple[str, dict[str, Any]]] = [
    ("SET s = :v", {":v": {"S": "changed"}}),
    ("ADD n :one", {":one": {"N": "1"}}),
    ("SET n = n + :one", {":one": {"N": "5"}}),
    ("SET b = :f", {":f": {"BOOL": False}}),
    ("REMOVE z", {}),
    ("SET m.k = :v", {":v": {"S": "changed"}}),
    ("SET m.n = m.n + :one", {":one": {"N": "1"}}),
    ("SET l[0] = :v", {":v": {"S": "changed"}}),
    ("SET l = list_append(l, :more)", {":more": {"L": [{"S": "more"}]}}),
    ("ADD ss :more", {":more": {"SS": ["c"]}}),
    ("DELETE ns :gone", {":gone": {"NS": ["1"]}}),
    ("SET txt = :v", {":v": {"S": "short now"}}),
]


@pytest.fixture(scope="module")
def clients() -> Iterator[tuple[Any, Any]]:
    with standin_and_plain_dynamodb() as both:
        yield both


def _twins_after_updates(dynamodb: Any) -> list[Any]:
    keys = [{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}]
    dynamodb.create_table(
        TableName=TABLE,
        BillingMode="PAY_PER_REQUEST",
        KeySchema=keys,
        AttributeDefinitions=[{"AttributeName": n, "AttributeType": "S"} for n in ("pk", "sk")],
    )
    for twin in ("a", "b", "c"):
        item = {"pk": {"S": "p"}, "sk": {"S": twin}, **VALUES}
        dynamodb.put_item(TableName=TABLE, Item=item)
    key = {"pk": {"S": "p"}, "sk": {"S": "a"}}
    for expression, values in UPDATES:
        request: dict[str, Any] = {"TableName": TABLE, "Key": key, "UpdateExpression": expression}
        if values:
            request["ExpressionAttributeValues"] = values
        dynamodb.update_item(**request)
    refused = dynamodb.exceptions.ConditionalCheckFailedException
    with pytest.raises(refused):
        dynamodb.update_item(
            TableName=TABLE,
            Key={"pk": {"S": "p"}, "sk": {"S": "c"}},
            UpdateExpression="SET s = :v",
            ConditionExpression="s = :other",
            ExpressionAttributeValues={":v": {"S": "changed"}, ":other": {"S": "not it"}},
        )
    dynamodb.transact_write_items(
        TransactItems=[
            {
                "Update": {
                    "TableName": TABLE,
                    "Key": {"pk": {"S": "p"}, "sk": {"S": "c"}},
                    "UpdateExpression": "ADD n :one SET s = :v",
                    "ExpressionAttributeValues": {":one": {"N": "2"}, ":v": {"S": "in a tx"}},
                }
            }
        ]
    )
    answer = dynamodb.query(
        TableName=TABLE,
        KeyConditionExpression="pk = :p",
        ExpressionAttributeValues={":p": {"S": "p"}},
        ConsistentRead=True,
    )
    return [_comparable(item) for item in answer["Items"]]


def _comparable(item: dict[str, Any]) -> dict[str, Any]:
    """Sets compare as sets (neither server promises their order)."""
    return {
        name: {kind: sorted(inner) if kind in ("SS", "NS") else inner}
        for name, value in item.items()
        for kind, inner in value.items()
    }


def test_a_changed_twin_leaves_the_others_as_plain_moto_does(clients: tuple[Any, Any]) -> None:
    standin, plain = clients
    expected = _twins_after_updates(plain)
    assert _twins_after_updates(standin) == expected
    untouched = next(item for item in expected if item["sk"] == {"S": "b"})
    assert untouched == _comparable({"pk": {"S": "p"}, "sk": {"S": "b"}, **VALUES})
