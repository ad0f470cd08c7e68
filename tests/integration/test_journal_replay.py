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

from pawl.local import snapshot
from pawl.local.journal import segment_numbers, segment_path
from pawl.local.standin import AwsStandIn

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
    # The restored state is kept out of the cyclic collector's full walks.
    assert summary["frozen_objects"] > 0
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
    """The runtime's compaction: the stand-in cuts the journal and writes the state at the
    cut from a forked child, then drops the segments before the cut."""
    reply = one.server.control("snapshot", state_dir=str(state_dir), region=REGION, bucket=BUCKET)
    assert reply["written"] and reply["hold_ms"] < 5000
    assert reply["frozen_objects"] > 0  # the state at the cut is out of the collector's walks
    return int(reply["segment"])


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
    opened = second.server.control("open", state_dir=str(state_dir), region=REGION)
    assert opened["restored"]["items"] == len(document["tables"][TABLE])
    assert acknowledged[0] > 0
    assert second.counter("counter") == acknowledged[0]


SORTED_TABLE = "journal-sorted"
#: One item with every attribute type, binary ones nested too.
EVERY_TYPE: dict[str, Any] = {
    "id": {"S": "every"},
    "n": {"N": "12.5"},
    "b": {"B": b"\x00\xffraw"},
    "bs": {"BS": [b"\x01", b"\x02\xfe"]},
    "ss": {"SS": ["a", "b"]},
    "ns": {"NS": ["1", "2.5"]},
    "yes": {"BOOL": True},
    "nothing": {"NULL": True},
    "nested": {"M": {"list": {"L": [{"B": b"\x80"}, {"S": "x"}, {"NULL": True}]}}},
}


def _create_sorted_table(standin: StandIn) -> None:
    standin.dynamodb.create_table(
        TableName=SORTED_TABLE,
        KeySchema=[
            {"AttributeName": "pk", "KeyType": "HASH"},
            {"AttributeName": "sk", "KeyType": "RANGE"},
        ],
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
        ],
        BillingMode="PAY_PER_REQUEST",
    )


def test_a_snapshot_round_trips_every_type_tables_with_sort_keys_and_objects(
    tmp_path: Path, standins: list[StandIn]
) -> None:
    journal_dir, state_dir = tmp_path / "journal", tmp_path / "state"
    first = _start(journal_dir, standins)
    _create_sorted_table(first)
    first.server.control("open", **{"from": 0})
    first.dynamodb.put_item(TableName=TABLE, Item=EVERY_TYPE)
    for index in range(30):
        item = {"pk": {"S": f"p{index % 3}"}, "sk": {"S": f"s{index:03d}"}}
        first.dynamodb.put_item(TableName=SORTED_TABLE, Item=item)
    first.s3.put_object(
        Bucket=BUCKET,
        Key="a/b c.json",
        Body=b'{"a": 1}',
        ContentType="text/json",
        Metadata={"k": "v"},
    )
    _snapshot(first, state_dir)
    first.add("after-the-cut")  # in the journal only
    first.kill9()

    second = _start(journal_dir, standins)
    _create_sorted_table(second)
    opened = second.server.control("open", state_dir=str(state_dir), region=REGION)
    assert opened["restored"]["items"] == 31 and opened["restored"]["objects"] == 1
    assert opened["replayed"] == 1
    got = second.dynamodb.get_item(TableName=TABLE, Key={"id": {"S": "every"}})["Item"]
    assert got == EVERY_TYPE
    assert second.counter("after-the-cut") == 1
    page = second.dynamodb.query(
        TableName=SORTED_TABLE,
        KeyConditionExpression="pk = :p",
        ExpressionAttributeValues={":p": {"S": "p1"}},
    )
    assert [i["sk"]["S"] for i in page["Items"]] == [f"s{i:03d}" for i in range(1, 30, 3)]
    blob = second.s3.get_object(Bucket=BUCKET, Key="a/b c.json")
    assert blob["Body"].read() == b'{"a": 1}'
    assert blob["ContentType"] == "text/json" and blob["Metadata"] == {"k": "v"}


def test_a_snapshot_with_nothing_new_writes_nothing(
    tmp_path: Path, standins: list[StandIn]
) -> None:
    one = _start(tmp_path / "journal", standins)
    one.server.control("open", **{"from": 0})
    one.add("x")
    _snapshot(one, tmp_path / "state")
    reply = one.server.control(
        "snapshot", state_dir=str(tmp_path / "state"), region=REGION, bucket=BUCKET
    )
    assert reply["written"] is False


def _check_policy(one: StandIn, state_dir: Path, floor: int, ratio: float = 0) -> dict[str, Any]:
    """One tick of the runtime's snapshot policy, driven directly (no clock)."""
    policy = {"min_journal_bytes": floor, "journal_ratio": ratio}
    return one.server.control(
        "snapshot", state_dir=str(state_dir), region=REGION, bucket=BUCKET, policy=policy
    )


def test_the_policy_snapshots_once_the_journal_reaches_its_floor(
    tmp_path: Path, standins: list[StandIn]
) -> None:
    journal_dir, state_dir = tmp_path / "journal", tmp_path / "state"
    one = _start(journal_dir, standins)
    one.server.control("open", **{"from": 0})
    one.add("counter")
    (segment,) = segment_numbers(journal_dir)
    one_write = segment_path(journal_dir, segment).stat().st_size
    # Records differ by a few bytes (each carries its time): half a record of slack.
    floor = 3 * one_write - one_write // 2
    below = _check_policy(one, state_dir, floor)
    assert below["written"] is False and below["journal_bytes"] == one_write
    one.add("counter")
    assert _check_policy(one, state_dir, floor)["written"] is False
    assert not (state_dir / snapshot.SNAPSHOT_FILE).exists()
    one.add("counter")
    reached = _check_policy(one, state_dir, floor)
    assert reached["written"] and reached["journal_bytes"] >= floor
    assert segment_numbers(journal_dir) == [reached["segment"]]
    # Now the last snapshot's size counts too: a ratio of it can be above the floor.
    size = snapshot.snapshot_bytes(state_dir)
    one.add("counter")
    by_ratio = _check_policy(one, state_dir, 0, ratio=100.0)
    assert by_ratio["threshold_bytes"] == 100 * size and by_ratio["written"] is False
    one.kill9()

    again = _start(journal_dir, standins)
    opened = again.server.control("open", state_dir=str(state_dir), region=REGION)
    assert opened["replayed"] == 1 and again.counter("counter") == 4
