"""Query pages through the stand-in are plain moto's pages, page by page.

The stand-in hands moto only the stretch of a sorted partition a Query page can reach
(``local/moto_query_pages.py``); every page, its Count and ScannedCount and its
LastEvaluatedKey must still be what plain moto (its own server, nothing patched) answers,
for index and table Queries, forwards and backwards, with every range condition, with
limits below, at and above what matches, with a page ending exactly on a range bound, with
filter expressions, and after writes move items.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.plain_moto import standin_and_plain_dynamodb

pytestmark = pytest.mark.slow

TABLE = "pages"
#: Conditions on the sort attribute (``#r``), each with its values.
CONDITIONS: list[tuple[str, dict[str, str]]] = [
    ("", {}),
    ("AND #r <= :a", {":a": "k09"}),
    ("AND #r < :a", {":a": "k09"}),
    ("AND #r >= :a", {":a": "k13"}),
    ("AND #r > :a", {":a": "k13"}),
    ("AND #r = :a", {":a": "k05"}),
    ("AND #r BETWEEN :a AND :b", {":a": "k04", ":b": "k11"}),
    ("AND #r BETWEEN :a AND :b", {":a": "k045", ":b": "k105"}),
    ("AND begins_with(#r, :a)", {":a": "k1"}),
    ("AND begins_with(#r, :a)", {":a": "zz"}),
    ("AND #r <= :a", {":a": "a"}),
]
#: 1, 2, what ``#r <= k09`` matches on the index (a page ending on the bound), more than
#: the partition holds, and none.
LIMITS = [1, 2, 7, 20, 100, None]


@pytest.fixture(scope="module")
def clients() -> Iterator[tuple[Any, Any]]:
    with standin_and_plain_dynamodb() as both:
        for dynamodb in both:
            _create(dynamodb)
        yield both


def _create(dynamodb: Any) -> None:
    keys = [{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}]
    dynamodb.create_table(
        TableName=TABLE,
        BillingMode="PAY_PER_REQUEST",
        KeySchema=keys,
        AttributeDefinitions=[
            {"AttributeName": n, "AttributeType": "S"} for n in ("pk", "sk", "ds", "ck")
        ],
        GlobalSecondaryIndexes=[
            {
                "IndexName": "by_dataset",
                "KeySchema": [
                    {"AttributeName": "ds", "KeyType": "HASH"},
                    {"AttributeName": "ck", "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "ALL"},
            }
        ],
    )
    for n in range(40):  # every created key twice: ties broken by the table's keys
        item = {
            "pk": {"S": "a" if n % 3 else "b"},
            "sk": {"S": f"k{n // 2:02d}-{n:02d}"},
            "ds": {"S": "d"},
            "ck": {"S": f"k{n // 2:02d}"},
            "n": {"N": str(n)},
        }
        dynamodb.put_item(TableName=TABLE, Item=item)
    for n in range(3):  # another dataset, and items the index leaves out (no range key)
        dynamodb.put_item(
            TableName=TABLE,
            Item={"pk": {"S": "a"}, "sk": {"S": f"e{n}"}, "ds": {"S": "e"}, "ck": {"S": "k05"}},
        )
        dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": "a"}, "sk": {"S": f"z{n}"}})


def _pages(dynamodb: Any, request: dict[str, Any], limit: int | None) -> list[Any]:
    """Every page of the Query, until moto gives no LastEvaluatedKey (at most 60 pages)."""
    answers: list[Any] = []
    start = None
    for _ in range(60):
        page = dict(request, **({"Limit": limit} if limit else {}))
        if start is not None:
            page["ExclusiveStartKey"] = start
        answer = dynamodb.query(**page)
        answers.append(
            [
                answer["Items"],
                answer["Count"],
                answer["ScannedCount"],
                answer.get("LastEvaluatedKey"),
            ]
        )
        start = answer.get("LastEvaluatedKey")
        if start is None:
            break
    return answers


def _requests(index: bool) -> Iterator[dict[str, Any]]:
    hash_attr, range_attr, hash_value = ("ds", "ck", "d") if index else ("pk", "sk", "a")
    for condition, values in CONDITIONS:
        for forward in (True, False):
            request: dict[str, Any] = {
                "TableName": TABLE,
                "KeyConditionExpression": f"#h = :h {condition}",
                "ExpressionAttributeNames": {"#h": hash_attr}
                | ({"#r": range_attr} if condition else {}),
                "ExpressionAttributeValues": {":h": {"S": hash_value}}
                | {name: {"S": value} for name, value in values.items()},
                "ScanIndexForward": forward,
            }
            if index:
                request["IndexName"] = "by_dataset"
            yield request


def _conversation(dynamodb: Any, index: bool) -> list[Any]:
    answers = []
    for request in _requests(index):
        for limit in LIMITS:
            answers.append(_pages(dynamodb, request, limit))
    # A filter expression (applied after the page is cut) and a projection.
    filtered = next(_requests(index)) | {
        "FilterExpression": "#n > :n",
        "ProjectionExpression": "sk, n",
    }
    filtered["ExpressionAttributeNames"] = {**filtered["ExpressionAttributeNames"], "#n": "n"}
    filtered["ExpressionAttributeValues"] = {
        **filtered["ExpressionAttributeValues"],
        ":n": {"N": "17"},
    }
    for limit in (3, 20, None):
        answers.append(_pages(dynamodb, filtered, limit))
    for limit in (2, None):
        answers.append(_pages(dynamodb, _legacy_request(index), limit))
    return answers


def _legacy_request(index: bool) -> dict[str, Any]:
    """KeyConditions and a QueryFilter (moto tests the filter on every item it walks)."""
    hash_attr, range_attr, hash_value = ("ds", "ck", "d") if index else ("pk", "sk", "b")
    return {
        "TableName": TABLE,
        **({"IndexName": "by_dataset"} if index else {}),
        "KeyConditions": {
            hash_attr: {"AttributeValueList": [{"S": hash_value}], "ComparisonOperator": "EQ"},
            range_attr: {"AttributeValueList": [{"S": "k09"}], "ComparisonOperator": "LE"},
        },
        "QueryFilter": {"n": {"AttributeValueList": [{"N": "4"}], "ComparisonOperator": "GT"}},
    }


def _write_between_pages(dynamodb: Any) -> list[Any]:
    """A page, then writes that move, add and remove items, then the next page."""
    request = {
        "TableName": TABLE,
        "IndexName": "by_dataset",
        "KeyConditionExpression": "ds = :d AND ck <= :c",
        "ExpressionAttributeValues": {":d": {"S": "d"}, ":c": {"S": "k15"}},
        "Limit": 6,
    }
    first = dynamodb.query(**request)
    dynamodb.update_item(
        TableName=TABLE,
        Key={"pk": {"S": "a"}, "sk": {"S": "k08-17"}},
        UpdateExpression="SET ck = :c",
        ExpressionAttributeValues={":c": {"S": "k01"}},
    )
    dynamodb.delete_item(TableName=TABLE, Key={"pk": {"S": "a"}, "sk": {"S": "k04-08"}})
    dynamodb.put_item(
        TableName=TABLE,
        Item={"pk": {"S": "a"}, "sk": {"S": "k03-99"}, "ds": {"S": "d"}, "ck": {"S": "k03"}},
    )
    rest = _pages(dynamodb, request | {"ExclusiveStartKey": first["LastEvaluatedKey"]}, 6)
    table_request = {
        "TableName": TABLE,
        "KeyConditionExpression": "pk = :p",
        "ExpressionAttributeValues": {":p": {"S": "a"}},
    }
    return [first["Items"], rest, _pages(dynamodb, table_request, 9)]


@pytest.mark.parametrize("index", [True, False], ids=["index", "table"])
def test_every_page_is_plain_motos(clients: tuple[Any, Any], index: bool) -> None:
    standin, plain = clients
    through_standin = _conversation(standin, index)
    through_plain = _conversation(plain, index)
    assert through_standin == through_plain
    pages_with_keys = [p for query in through_plain for p in query if p[3] is not None]
    assert len(pages_with_keys) > 100  # the conversation pages, not just single answers


def test_pages_after_writes_are_plain_motos(clients: tuple[Any, Any]) -> None:
    standin, plain = clients
    assert _write_between_pages(standin) == _write_between_pages(plain)


def _size_bound_pages(dynamodb: Any) -> list[Any]:
    """Pages that end on moto's 1 MB rule, before and after an update grows an item in
    place: the stand-in keeps each item's size for one table state (the update must
    make it measure again)."""
    table = "sized"
    dynamodb.create_table(
        TableName=table,
        BillingMode="PAY_PER_REQUEST",
        KeySchema=[
            {"AttributeName": "pk", "KeyType": "HASH"},
            {"AttributeName": "sk", "KeyType": "RANGE"},
        ],
        AttributeDefinitions=[{"AttributeName": n, "AttributeType": "S"} for n in ("pk", "sk")],
    )
    for n in range(7):  # five fit in a page (950 KB), a sixth would pass 1 MB
        item = {"pk": {"S": "p"}, "sk": {"S": f"s{n}"}, "body": {"S": "x" * 190_000}}
        dynamodb.put_item(TableName=table, Item=item)
    request = {
        "TableName": table,
        "KeyConditionExpression": "pk = :p",
        "ExpressionAttributeValues": {":p": {"S": "p"}},
        "ProjectionExpression": "sk",
    }

    def page_keys() -> list[Any]:
        answer = dynamodb.query(**request)
        return [[i["sk"]["S"] for i in answer["Items"]], answer.get("LastEvaluatedKey")]

    before = page_keys()
    dynamodb.update_item(
        TableName=table,
        Key={"pk": {"S": "p"}, "sk": {"S": "s0"}},
        UpdateExpression="SET extra = :b",
        ExpressionAttributeValues={":b": {"S": "y" * 60_000}},
    )
    return [before, page_keys()]


def test_pages_ending_on_size_follow_an_item_grown_in_place(clients: tuple[Any, Any]) -> None:
    standin, plain = clients
    through_plain = _size_bound_pages(plain)
    assert _size_bound_pages(standin) == through_plain
    assert [len(keys) for keys, _ in through_plain] == [5, 4]  # the update moved the bound
