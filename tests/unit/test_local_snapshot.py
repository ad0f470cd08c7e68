"""Snapshots carry every table item and bucket object across a fresh stand-in (moto).

The stand-in dumps and loads moto's models directly (``local/standin_state.py``); moto
in-process holds the same models, so these run against ``mock_aws``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from moto import mock_aws

from chalicelib import aws
from chalicelib.bootstrap import ensure_tables
from chalicelib.settings import get_settings
from pawl.local import snapshot, standin_state
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


def test_dump_load_round_trip_into_a_fresh_stand_in(tmp_path: Path, stand_in: None) -> None:
    """What the stand-in writes from moto's models comes back equal, bytes and all."""
    _start_over()
    _fill()
    settings = get_settings()
    before = standin_state.dump(settings.region, settings.bucket)
    snapshot.write_atomically(tmp_path, snapshot.encode_document(before))
    document = snapshot.read_snapshot(tmp_path)
    assert document is not None
    projects = settings.table_name("projects")
    assert len(document["tables"][projects]) == 60

    _start_over()
    assert standin_state.dump(settings.region, settings.bucket)["tables"][projects] == []
    loaded = standin_state.load(document, settings.region)
    assert (loaded.items, loaded.objects, loaded.skipped_tables) == (60, 2, [])
    assert standin_state.dump(settings.region, settings.bucket) == before
    got = aws.client("dynamodb").get_item(TableName=projects, Key={"id": {"S": "proj_0000"}})
    assert got["Item"]["blob"] == {"B": b"\x00\xffraw"}
    assert got["Item"]["nested"]["M"]["list"]["L"][0] == {"B": b"\x80"}
    blob = aws.client("s3").get_object(Bucket=settings.bucket, Key="outputs/b.bin")
    assert blob["Body"].read() == bytes(range(256))
    assert blob["Metadata"] == {"k": "v"}
    text = aws.client("s3").get_object(Bucket=settings.bucket, Key="outputs/a.json")
    assert text["ContentType"] == "text/json"


def test_the_streamed_snapshot_is_the_document(tmp_path: Path, stand_in: None) -> None:
    """The forked writer streams the file a chunk of items at a time (more than one chunk
    here); what it writes parses to what :func:`dump` builds in memory."""
    _start_over()
    _fill()
    table = get_settings().table_name("datasets")
    dynamodb = aws.client("dynamodb")
    for index in range(standin_state._CHUNK_ITEMS + 1):
        dynamodb.put_item(TableName=table, Item={"id": {"S": f"d{index}"}})
    settings = get_settings()
    extra = {"journal_from": 7, "taken_at": "2026-01-01T00:00:00Z"}
    snapshot.write_atomically_with(
        tmp_path,
        lambda handle: standin_state.stream_dump(handle, settings.region, settings.bucket, extra),
    )
    document = snapshot.read_snapshot(tmp_path)
    expected = {**standin_state.dump(settings.region, settings.bucket), **extra}
    assert document == expected
    # Read back a chunk at a time (as a restart does), it is the same state again.
    _start_over()
    loaded, rest = standin_state.load_file(tmp_path / snapshot.SNAPSHOT_FILE, settings.region)
    assert (loaded.objects, loaded.skipped_tables) == (2, [])
    assert rest["journal_from"] == 7
    assert {**standin_state.dump(settings.region, settings.bucket), **extra} == expected
    assert len(expected["tables"][table]) == standin_state._CHUNK_ITEMS + 1
    assert snapshot.snapshot_bytes(tmp_path) == (tmp_path / snapshot.SNAPSHOT_FILE).stat().st_size
    assert snapshot.snapshot_bytes(tmp_path / "missing") == 0


def test_load_names_tables_that_no_longer_exist(stand_in: None) -> None:
    document = {
        "format": snapshot.FORMAT_VERSION,
        "bucket": get_settings().bucket,
        "tables": {"gone-table": [{"id": {"S": "x"}}]},
        "objects": [],
    }
    loaded = standin_state.load(document, get_settings().region)
    assert loaded.skipped_tables == ["gone-table"]
    assert loaded.items == 0


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
