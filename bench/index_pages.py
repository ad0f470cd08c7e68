"""What a Query page costs the stand-in over a big partition.

Fills one 100,000-item partition of a table shaped like pawl's (a ``by_dataset`` global
secondary index on ``ds`` / ``created_key``; the table's own keys ``pk`` / ``sk``) in
moto in-process, with the stand-in's patches applied (``--plain`` leaves moto as it is),
then pages through it 200 items a page the way pawl does:

- ``cursor``: the fan-out's pages (``created_key BETWEEN after AND cutoff``, Limit 201, the
  next page starting after the last key read), as ``store/run_items.dataset_items_page`` asks;
- ``start-key``: ``created_key <= cutoff`` pages chained by ExclusiveStartKey;
- ``table``: a table Query on one hash key (settle's results pages), by ExclusiveStartKey.

It prints, per mode, the pages read, moto's CPU inside ``Table.query`` per page, and the
whole process's CPU per page (the boto3 client's share included). ``--pages`` stops each
mode early (moto unpatched takes seconds a page at 100k).

    PYTHONPATH=. .venv/bin/python bench/index_pages.py [--items 100000] [--pages 500] [--plain]
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable, Iterator
from typing import Any

from moto import mock_aws

TABLE = "bench-pages"
PAGE = 200


class QueryClock:
    """CPU spent inside moto's ``Table.query`` (outermost wrapper, so patches included)."""

    def __init__(self) -> None:
        self.seconds = 0.0

    def install(self) -> None:
        from moto.dynamodb.models.table import Table

        query: Callable[..., Any] = Table.query

        def timed(*args: Any, **kwargs: Any) -> Any:
            began = time.thread_time()
            try:
                return query(*args, **kwargs)
            finally:
                self.seconds += time.thread_time() - began

        Table.query = timed  # type: ignore[method-assign]


def _fill(items: int) -> None:
    from moto.dynamodb.models import dynamodb_backends

    backend = dynamodb_backends["123456789012"]["us-east-1"]
    table = backend.get_table(TABLE)
    for n in range(items):
        table.put_item(
            {
                "pk": {"S": f"item-{n:06d}"},
                "sk": {"S": "v"},
                "ds": {"S": "dataset"},
                "created_key": {"S": f"2026-12-01T00:00:00.{n:06d}Z#item-{n:06d}"},
                "input": {"S": "x" * 400},
            }
        )
        table.put_item({"pk": {"S": "run"}, "sk": {"S": f"result-{n:06d}"}, "score": {"N": "1"}})


def _create(dynamodb: Any) -> None:
    dynamodb.create_table(
        TableName=TABLE,
        BillingMode="PAY_PER_REQUEST",
        KeySchema=[
            {"AttributeName": "pk", "KeyType": "HASH"},
            {"AttributeName": "sk", "KeyType": "RANGE"},
        ],
        AttributeDefinitions=[
            {"AttributeName": n, "AttributeType": "S"} for n in ("pk", "sk", "ds", "created_key")
        ],
        GlobalSecondaryIndexes=[
            {
                "IndexName": "by_dataset",
                "KeySchema": [
                    {"AttributeName": "ds", "KeyType": "HASH"},
                    {"AttributeName": "created_key", "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "ALL"},
            }
        ],
    )


CUTOFF = "2027"
INDEX = {"TableName": TABLE, "IndexName": "by_dataset"}


def _cursor_pages(dynamodb: Any) -> Iterator[int]:
    after = ""
    while True:
        values = {":d": {"S": "dataset"}, ":c": {"S": CUTOFF}} | (
            {":a": {"S": after}} if after else {}
        )
        condition = "created_key BETWEEN :a AND :c" if after else "created_key <= :c"
        answer = dynamodb.query(
            **INDEX,
            KeyConditionExpression=f"ds = :d AND {condition}",
            ExpressionAttributeValues=values,
            Limit=PAGE + 1,
        )
        items = [i for i in answer["Items"] if i["created_key"]["S"] != after][:PAGE]
        yield len(items)
        if not items:
            return
        after = items[-1]["created_key"]["S"]


def _start_key_pages(dynamodb: Any, request: dict[str, Any]) -> Iterator[int]:
    start = None
    while True:
        answer = dynamodb.query(
            **request, Limit=PAGE, **({"ExclusiveStartKey": start} if start else {})
        )
        yield answer["Count"]
        start = answer.get("LastEvaluatedKey")
        if start is None:
            return


def _modes(dynamodb: Any) -> dict[str, Iterator[int]]:
    return {
        "cursor": _cursor_pages(dynamodb),
        "start-key": _start_key_pages(
            dynamodb,
            INDEX
            | {
                "KeyConditionExpression": "ds = :d AND created_key <= :c",
                "ExpressionAttributeValues": {":d": {"S": "dataset"}, ":c": {"S": CUTOFF}},
            },
        ),
        "table": _start_key_pages(
            dynamodb,
            {
                "TableName": TABLE,
                "KeyConditionExpression": "pk = :p",
                "ExpressionAttributeValues": {":p": {"S": "run"}},
            },
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--pages", type=int, default=None, help="at most this many a mode")
    parser.add_argument("--plain", action="store_true", help="moto without the stand-in's patches")
    args = parser.parse_args()
    for name, value in (("AWS_ACCESS_KEY_ID", "b"), ("AWS_SECRET_ACCESS_KEY", "b")):
        os.environ.setdefault(name, value)
    os.environ["AWS_DEFAULT_REGION"] = "us-east-1"
    if not args.plain:
        from pawl.local import moto_server_patches

        assert moto_server_patches.apply(), "moto is not the release the patches know"
    clock = QueryClock()
    clock.install()
    with mock_aws():
        import boto3

        dynamodb = boto3.client("dynamodb", region_name="us-east-1")
        _create(dynamodb)
        _fill(args.items)
        print(f"{args.items} items, {'plain moto' if args.plain else 'patched'}")
        print(
            f"{'mode':<10} {'pages':>6} {'items':>7} {'moto ms/page':>13} {'process ms/page':>16}"
        )
        for mode, pages in _modes(dynamodb).items():
            clock.seconds, began, read, count = 0.0, time.process_time(), 0, 0
            for read, got in enumerate(pages, start=1):
                count += got
                if args.pages and read >= args.pages:
                    break
            spent = time.process_time() - began
            moto_ms, process_ms = clock.seconds / read * 1000, spent / read * 1000
            print(f"{mode:<10} {read:>6} {count:>7} {moto_ms:>13.2f} {process_ms:>16.2f}")


if __name__ == "__main__":
    main()
