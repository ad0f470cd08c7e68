"""LocalRuntime embedded in-process: pollers, schedules, local routes, snapshot, clean stop."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import httpx
import pytest
from chalice import Chalice, Rate
from chalice.app import CloudWatchEvent, SQSEvent

from chalicelib import aws, queues
from chalicelib.settings import get_settings
from pawl.local.compaction import CompactionPolicy
from pawl.local.runtime import LocalRuntime, RuntimeConfig
from tests.conftest import ADMIN_KEY

pytestmark = pytest.mark.slow


def toy_app() -> Chalice:
    """Writes one S3 object per record and per scheduled run (so a snapshot can see them)."""
    app = Chalice("runtime-test")
    item_queue = get_settings().item_queue

    @app.on_sqs_message(queue=item_queue, batch_size=5)
    def record_items(event: SQSEvent) -> dict[str, Any]:
        for record in event:
            name = json.loads(record.body)["name"]
            aws.client("s3").put_object(
                Bucket=get_settings().bucket, Key=f"items/{name}", Body=record.body.encode()
            )
        return {"batchItemFailures": []}

    @app.schedule(Rate(1, unit=Rate.HOURS))
    def hourly(event: CloudWatchEvent) -> dict[str, str]:
        aws.client("s3").put_object(Bucket=get_settings().bucket, Key="ran/hourly", Body=b"1")
        return {"ran": event.to_dict()["detail-type"]}

    return app


def _keys() -> list[str]:
    listing = aws.client("s3").list_objects_v2(Bucket=get_settings().bucket)
    return sorted(entry["Key"] for entry in listing.get("Contents", []))


def test_embedded_runtime_runs_handlers_and_snapshots_on_stop(tmp_path: Path) -> None:
    config = RuntimeConfig(
        port=0,
        state_dir=tmp_path,
        app=toy_app(),
        snapshot_interval_s=0,
        run_schedules=False,
        retry_delay_s=0,
    )
    endpoint_before = os.environ.get("AWS_ENDPOINT_URL")
    runtime = LocalRuntime(config)
    with runtime:
        assert os.environ["AWS_ENDPOINT_URL"] == runtime.aws_endpoint
        assert runtime.admin_key == ADMIN_KEY
        queues.send_many(get_settings().item_queue, [{"name": f"n{i}"} for i in range(12)])
        assert runtime.drain(timeout_s=30)
        assert _keys() == sorted(f"items/n{i}" for i in range(12))

        headers = {"Authorization": f"Bearer {runtime.admin_key}"}
        with httpx.Client(base_url=runtime.url, headers=headers, timeout=30) as local:
            status = local.get("/_local/status").json()
            (poller,) = status["pollers"]
            assert poller["queue"] == get_settings().item_queue
            assert poller["workers"] == RuntimeConfig().item_workers
            assert poller["deleted"] == 12
            ran = local.post("/_local/schedules/hourly/run")
            assert ran.status_code == 200, ran.text
            assert ran.json()["result"] == {"ran": "Scheduled Event"}
            assert local.post("/_local/schedules/nope/run").status_code == 404
            assert local.post("/_local/snapshot").json()["written"] is True
        assert "ran/hourly" in _keys()

    assert os.environ.get("AWS_ENDPOINT_URL") == endpoint_before
    document = json.loads((tmp_path / "snapshot.json").read_bytes())
    expected = sorted(["ran/hourly", *(f"items/n{i}" for i in range(12))])
    assert sorted(obj["key"] for obj in document["objects"]) == expected
    assert get_settings().table_name("projects") in document["tables"]


def test_the_periodic_check_snapshots_once_the_journal_is_big_enough(tmp_path: Path) -> None:
    """What the snapshot loop does on each tick, driven directly: below the policy's floor
    nothing is written, at it a snapshot is."""
    policy = CompactionPolicy(min_journal_bytes=64 * 1024, journal_ratio=0)
    config = RuntimeConfig(
        port=0, state_dir=tmp_path, snapshot_interval_s=0, run_schedules=False, compaction=policy
    )
    with LocalRuntime(config) as runtime:
        s3, bucket = aws.client("s3"), get_settings().bucket
        s3.put_object(Bucket=bucket, Key="small", Body=b"x" * 1024)
        assert runtime.compact_if_due() is False
        assert runtime.last_check is not None
        assert 1024 < runtime.last_check["journal_bytes"] < policy.min_journal_bytes
        assert not (tmp_path / "snapshot.json").exists()
        s3.put_object(Bucket=bucket, Key="large", Body=b"y" * policy.min_journal_bytes)
        assert runtime.compact_if_due() is True
        assert runtime.snapshots_written == 1
        assert runtime.last_check["journal_bytes"] >= policy.min_journal_bytes
    document = json.loads((tmp_path / "snapshot.json").read_bytes())
    assert sorted(obj["key"] for obj in document["objects"]) == ["large", "small"]
