"""Snapshots carry every table item and bucket object across a fresh stand-in (moto)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from moto import mock_aws

from chalicelib import aws
from chalicelib.bootstrap import ensure_tables
from chalicelib.local import snapshot
from chalicelib.settings import get_settings
from tests.conftest import reset_process_state


@pytest.fixture(scope="module")
def stand_in() -> Iterator[None]:
    """One moto stand-in for the module: creating every table is the slow part of a test."""
    with mock_aws():
        reset_process_state()
        from chalicelib.bootstrap import ensure_resources

        ensure_resources()
        yield
    reset_process_state()


def _start_over() -> None:
    """Drop every table and object, then create the tables again: a fresh, empty stand-in."""
    dynamodb = aws.client("dynamodb")
    for table in dynamodb.list_tables()["TableNames"]:
        dynamodb.delete_table(TableName=table)
    s3 = aws.client("s3")
    bucket = get_settings().bucket
    for entry in s3.list_objects_v2(Bucket=bucket).get("Contents", []):
        s3.delete_object(Bucket=bucket, Key=entry["Key"])
    ensure_tables()


def _fill() -> None:
    dynamodb = aws.client("dynamodb")
    table = get_settings().table_name("projects")
    # 60 items: more than two BatchWriteItem pages on the way back.
    for index in range(60):
        item: dict[str, Any] = {
            "id": {"S": f"proj_{index:04d}"},
            "name": {"S": f"project {index}"},
            "count": {"N": str(index)},
        }
        if index == 0:
            item["blob"] = {"B": b"\x00\xffraw"}
            item["blobs"] = {"BS": [b"\x01", b"\x02\xfe"]}
            item["nested"] = {"M": {"list": {"L": [{"B": b"\x80"}, {"S": "x"}, {"NULL": True}]}}}
        dynamodb.put_item(TableName=table, Item=item)
    s3 = aws.client("s3")
    bucket = get_settings().bucket
    s3.put_object(Bucket=bucket, Key="outputs/a.json", Body=b'{"a": 1}', ContentType="text/json")
    s3.put_object(Bucket=bucket, Key="outputs/b.bin", Body=bytes(range(256)), Metadata={"k": "v"})


def test_encoding_makes_binary_json_safe_and_back() -> None:
    item = {
        "b": {"B": b"\x00\xff"},
        "bs": {"BS": [b"\x01"]},
        "m": {"M": {"l": {"L": [{"B": b"\x80"}, {"N": "1"}]}}},
        "s": {"S": "plain"},
    }
    encoded = snapshot.encode_item(item)
    json.dumps(encoded)  # would raise on bytes
    assert snapshot.decode_item(encoded) == item


def test_capture_restore_round_trip_into_a_fresh_stand_in(tmp_path: Path, stand_in: None) -> None:
    _start_over()
    _fill()
    writer = snapshot.SnapshotWriter(tmp_path, get_settings().bucket)
    assert writer.save() is True
    assert writer.save() is False  # unchanged: nothing rewritten
    before = snapshot.capture(get_settings().bucket)
    document = snapshot.read_snapshot(tmp_path)
    assert document is not None
    assert "taken_at" in document

    _start_over()
    projects = get_settings().table_name("projects")
    assert snapshot.capture(get_settings().bucket)["tables"][projects] == []
    summary = snapshot.restore(document)
    after = snapshot.capture(get_settings().bucket)
    blob = aws.client("s3").get_object(Bucket=get_settings().bucket, Key="outputs/b.bin")
    assert blob["Body"].read() == bytes(range(256))
    assert blob["Metadata"] == {"k": "v"}
    assert summary.items == 60 and summary.objects == 2 and summary.skipped_tables == []
    assert after == before


def test_restore_names_tables_that_no_longer_exist(stand_in: None) -> None:
    document = {
        "format": snapshot.FORMAT_VERSION,
        "bucket": get_settings().bucket,
        "tables": {"gone-table": [{"id": {"S": "x"}}]},
        "objects": [],
    }
    summary = snapshot.restore(document)
    assert summary.skipped_tables == ["gone-table"]
    assert summary.items == 0


def test_write_is_atomic_and_leaves_no_temp_files(tmp_path: Path) -> None:
    snapshot.write_atomically(tmp_path, b'{"format": 1, "n": 1}')
    snapshot.write_atomically(tmp_path, b'{"format": 1, "n": 2}')
    assert sorted(p.name for p in tmp_path.iterdir()) == [snapshot.SNAPSHOT_FILE]
    assert json.loads((tmp_path / snapshot.SNAPSHOT_FILE).read_bytes())["n"] == 2


def test_a_failed_write_keeps_the_previous_snapshot(tmp_path: Path) -> None:
    snapshot.write_atomically(tmp_path, b'{"format": 1, "n": 1}')

    class Unencodable:
        pass

    with pytest.raises(TypeError):
        snapshot.write_atomically(tmp_path, Unencodable())  # type: ignore[arg-type]
    assert sorted(p.name for p in tmp_path.iterdir()) == [snapshot.SNAPSHOT_FILE]
    assert json.loads((tmp_path / snapshot.SNAPSHOT_FILE).read_bytes())["n"] == 1


def test_unknown_format_is_refused(tmp_path: Path) -> None:
    (tmp_path / snapshot.SNAPSHOT_FILE).write_text('{"format": 99}')
    with pytest.raises(ValueError, match="format"):
        snapshot.read_snapshot(tmp_path)
    assert snapshot.read_snapshot(tmp_path / "missing") is None
