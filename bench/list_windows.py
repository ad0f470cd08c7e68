"""What a list window costs: DynamoDB requests and CPU for the first page, a cursor page
and a deep ``offset``, over one dataset's items.

Runs against moto in-process (no HTTP: the store's ``list_items`` is what every list
route calls), fills a dataset with N items of about 1 KB, and for each window prints the
Query requests it made (counted at the botocore layer), the rows DynamoDB read for it
(``ScannedCount``), and the CPU time of the call. Request and row counts carry over to
AWS; the CPU time is moto's and ours together.

    .venv/bin/python bench/list_windows.py [--items 10000]
"""

from __future__ import annotations

import argparse
import os
import time
from collections import Counter
from typing import Any

from moto import mock_aws


class QueryCounter:
    """Counts Query requests and the rows they read (``ScannedCount``)."""

    def __init__(self) -> None:
        self.requests: Counter[str] = Counter()
        self.scanned = 0

    def before(self, model: Any, **_: Any) -> None:
        self.requests[model.name] += 1

    def after(self, model: Any, parsed: dict[str, Any], **_: Any) -> None:
        self.scanned += int(parsed.get("ScannedCount", 0))

    def take(self) -> tuple[int, int]:
        taken = (sum(self.requests.values()), self.scanned)
        self.requests, self.scanned = Counter(), 0
        return taken


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--items", type=int, default=10_000)
    args = parser.parse_args()
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "bench")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "bench")
    os.environ.setdefault("PAWL_SERVER_SECRET", "bench-secret-0123456789abcdefghijklmnop")
    with mock_aws():
        from chalicelib import wiring
        from chalicelib.bootstrap import ensure_resources
        from chalicelib.store import datasets, tenancy
        from chalicelib.store.models import DatasetItemModel
        from chalicelib.store.pagination import MAX_OFFSET, Window

        wiring.build()
        ensure_resources()
        project = tenancy.create_project("bench").id
        dataset = datasets.create_dataset(project, "bench", None).id
        text = "what is the refund policy? " * 36  # about 1 KB of input per item
        for start in range(0, args.items, datasets.MAX_ITEMS_PER_TRANSACTION):
            count = min(datasets.MAX_ITEMS_PER_TRANSACTION, args.items - start)
            batch = [
                datasets.NewItem([{"role": "user", "content": f"{i} {text}"}], "30 days", {})
                for i in range(start, start + count)
            ]
            datasets.create_items(dataset, project, batch)

        counter = QueryCounter()
        client = DatasetItemModel._get_connection().connection.client
        client.meta.events.register("before-call.dynamodb.Query", counter.before)
        client.meta.events.register("after-call.dynamodb.Query", counter.after)
        deepest = min(MAX_OFFSET, args.items - 50)
        first = datasets.list_items(dataset, Window(limit=50, counted=True))
        windows = {
            "first page (total counted)": Window(limit=50, counted=True),
            "cursor page (total carried)": Window(limit=50, cursor=first.next_cursor),
            f"offset={deepest:,} (counted)": Window(limit=50, offset=deepest, counted=True),
            "first page, no total": Window(limit=50),
        }
        counter.take()
        print(f"{args.items:,} items of ~1 KB in one dataset; a page of 50:")
        for label, window in windows.items():
            cpu = time.process_time()
            listing = datasets.list_items(dataset, window)
            spent_ms = (time.process_time() - cpu) * 1000
            requests, scanned = counter.take()
            assert len(listing.items) == 50, listing
            print(
                f"  {label:30} {requests:3} Query requests, {scanned:6,} rows read, "
                f"{spent_ms:7.1f} ms CPU (total={listing.total}, offset={listing.offset})"
            )


if __name__ == "__main__":
    main()
