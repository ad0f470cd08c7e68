"""The stand-in's journal across ``kill -9``: what was acknowledged comes back, once.

A real stand-in process (moto's server with the journal) is killed with SIGKILL and a new
one replays its journal; with a snapshot cut in between, nothing is applied twice.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest

from chalicelib.local import snapshot
from chalicelib.local.journal import segment_numbers, segment_path
from chalicelib.local.standin import AwsStandIn

pytestmark = pytest.mark.slow

TABLE = "journal-test"
BUCKET = "journal-bucket"
REGION = "us-east-1"


class StandIn:
    """A journaling stand-in on ``journal_dir`` with clients, as the runtime would use it."""

    def __init__(self, journal_dir: Path) -> None:
        self.server = AwsStandIn(journal_dir=journal_dir)
        endpoint = self.server.start()
        # Each stand-in accepts only its own key (a restarted one has a new key; the journal
        # it replays carries no signatures).
        options = {
            "region_name": REGION,
            "endpoint_url": endpoint,
            "aws_access_key_id": self.server.credentials.access_key_id,
            "aws_secret_access_key": self.server.credentials.secret_access_key,
        }
        self.dynamodb: Any = boto3.client("dynamodb", **options)
        self.s3: Any = boto3.client("s3", **options)

    def bootstrap(self) -> None:
        """What ``bootstrap.ensure_resources`` does: before ``open``, so not journaled."""
        self.dynamodb.create_table(
            TableName=TABLE,
            KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        self.s3.create_bucket(Bucket=BUCKET)

    def counter(self, key: str) -> int | None:
        item = self.dynamodb.get_item(TableName=TABLE, Key={"id": {"S": key}}, ConsistentRead=True)
        return int(item["Item"]["n"]["N"]) if "Item" in item else None

    def add(self, key: str, amount: int = 1) -> None:
        self.dynamodb.update_item(
            TableName=TABLE,
            Key={"id": {"S": key}},
            UpdateExpression="ADD n :one",
            ExpressionAttributeValues={":one": {"N": str(amount)}},
        )

    def kill9(self) -> None:
        pid = self.server.pid
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        self.server._process = None


@pytest.fixture
def standins() -> Iterator[list[StandIn]]:
    started: list[StandIn] = []
    yield started
    for one in started:
        one.server.stop()


def _start(journal_dir: Path, standins: list[StandIn]) -> StandIn:
    one = StandIn(journal_dir)
    standins.append(one)
    one.bootstrap()
    return one


def test_acknowledged_writes_survive_kill9_and_a_torn_tail_is_dropped(
    tmp_path: Path, standins: list[StandIn]
) -> None:
    first = _start(tmp_path, standins)
    assert first.server.control("open", **{"from": 0})["replayed"] == 0
    for _ in range(3):
        first.add("counter")
    first.dynamodb.put_item(TableName=TABLE, Item={"id": {"S": "gone"}, "n": {"N": "1"}})
    first.dynamodb.delete_item(TableName=TABLE, Key={"id": {"S": "gone"}})
    first.dynamodb.transact_write_items(
        TransactItems=[
            {"Put": {"TableName": TABLE, "Item": {"id": {"S": "t1"}, "n": {"N": "7"}}}},
            {"Put": {"TableName": TABLE, "Item": {"id": {"S": "t2"}, "n": {"N": "8"}}}},
        ]
    )
    refused = first.dynamodb.exceptions.ConditionalCheckFailedException
    with pytest.raises(refused):  # a refused write is not journaled
        first.dynamodb.put_item(
            TableName=TABLE,
            Item={"id": {"S": "t1"}, "n": {"N": "0"}},
            ConditionExpression="attribute_not_exists(id)",
        )
    first.s3.put_object(Bucket=BUCKET, Key="a/b c.bin", Body=bytes(range(256)), Metadata={"k": "v"})
    first.s3.put_object(Bucket=BUCKET, Key="doomed", Body=b"x")
    first.s3.delete_objects(Bucket=BUCKET, Delete={"Objects": [{"Key": "doomed"}]})
    first.kill9()
    # A crash in the middle of an append: half a record at the end of the segment.
    (segment,) = segment_numbers(tmp_path)
    with open(segment_path(tmp_path, segment), "ab") as handle:
        handle.write(b"pwj1\xff\x00\x00\x00half")

    second = _start(tmp_path, standins)
    summary = second.server.control("open", **{"from": 0})
    assert summary["replayed"] == 9 and summary["refused"] == 0
    assert summary["torn"] == [segment]
    assert second.counter("counter") == 3
    assert second.counter("gone") is None
    assert (second.counter("t1"), second.counter("t2")) == (7, 8)
    blob = second.s3.get_object(Bucket=BUCKET, Key="a/b c.bin")
    assert blob["Body"].read() == bytes(range(256)) and blob["Metadata"] == {"k": "v"}
    keys = [o["Key"] for o in second.s3.list_objects_v2(Bucket=BUCKET).get("Contents", [])]
    assert keys == ["a/b c.bin"]
    # Replayed writes are not journaled again; new ones go to the next segment.
    second.add("counter")
    second.kill9()
    third = _start(tmp_path, standins)
    third.server.control("open", **{"from": 0})
    assert third.counter("counter") == 4


def _snapshot(one: StandIn, state_dir: Path) -> int:
    """The runtime's cut: freeze, capture, thaw, write with journal_from, drop the rest."""
    cut = one.server.control("freeze")
    try:
        document = {
            "format": snapshot.FORMAT_VERSION,
            "bucket": BUCKET,
            "tables": {
                TABLE: [
                    snapshot.encode_item(item)
                    for item in one.dynamodb.scan(TableName=TABLE, ConsistentRead=True)["Items"]
                ]
            },
            "objects": [],
        }
    finally:
        one.server.control("thaw")
    snapshot.SnapshotWriter(state_dir, BUCKET).write(document, journal_from=cut["segment"])
    one.server.control("drop_below", segment=cut["segment"])
    return int(cut["segment"])


def _wait_until(condition: Callable[[], bool], timeout_s: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.005)
    return False


def test_a_snapshot_cut_while_writes_race_applies_nothing_twice(
    tmp_path: Path, standins: list[StandIn]
) -> None:
    journal_dir, state_dir = tmp_path / "journal", tmp_path / "state"
    first = _start(journal_dir, standins)
    first.server.control("open", **{"from": 0})
    acknowledged = [0]
    stop = threading.Event()

    def keep_adding() -> None:
        while not stop.is_set():
            first.add("counter")
            acknowledged[0] += 1

    writer = threading.Thread(target=keep_adding)
    writer.start()
    cuts: list[int] = []
    try:
        for _ in range(4):
            # A cut rotates only when something was written since the last one; on a busy
            # machine the writer may not have run yet. Two more acknowledgements mean the
            # second write began after this line, so after the last thaw: the segment has it.
            seen = acknowledged[0]
            assert _wait_until(lambda seen=seen: acknowledged[0] > seen + 1), "the writer is stuck"
            cuts.append(_snapshot(first, state_dir))
    finally:
        stop.set()
        writer.join()
    assert cuts == sorted(cuts) and len(set(cuts)) == len(cuts)
    assert segment_numbers(journal_dir) == [cuts[-1]]  # compaction dropped the rest
    first.kill9()

    second = _start(journal_dir, standins)
    document = snapshot.read_snapshot(state_dir)
    assert document is not None and document["journal_from"] == cuts[-1]
    for item in document["tables"][TABLE]:
        second.dynamodb.put_item(TableName=TABLE, Item=snapshot.decode_item(item))
    second.server.control("open", **{"from": document["journal_from"]})
    assert acknowledged[0] > 0
    assert second.counter("counter") == acknowledged[0]
