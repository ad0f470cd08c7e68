"""Carry the stand-in's DynamoDB tables and S3 bucket across restarts of the local runtime.

moto keeps everything in memory. The runtime captures every table (a full scan, items in
DynamoDB JSON) and every object of pawl's bucket into one file in the state dir, written
atomically (temp file, fsync, rename), so a crash mid-write leaves the previous snapshot
intact. On start, after the tables exist, :func:`restore` writes them back. SQS messages
are not captured: in-flight runs are re-driven instead (see ``docs/local-runtime.md``).

Writes between snapshots are not lost: the stand-in journals each one before answering
(``local/journal.py``), and a snapshot records where in the journal it was cut
(``journal_from``), so a snapshot is compaction, not the durability mechanism.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chalicelib import aws
from chalicelib.clock import now_iso

log = logging.getLogger("pawl.local")

SNAPSHOT_FILE = "snapshot.json"
FORMAT_VERSION = 1
BATCH_WRITE_MAX = 25


@dataclass(frozen=True)
class RestoreSummary:
    items: int
    objects: int
    skipped_tables: list[str]


# --- DynamoDB JSON <-> plain JSON (binary values travel as base64) ------------------------


def encode_value(value: dict[str, Any]) -> dict[str, Any]:
    """One attribute value in DynamoDB JSON, with bytes made JSON-safe (base64)."""
    ((kind, inner),) = value.items()
    if kind == "B":
        return {"B": base64.b64encode(inner).decode("ascii")}
    if kind == "BS":
        return {"BS": [base64.b64encode(b).decode("ascii") for b in inner]}
    if kind == "M":
        return {"M": {k: encode_value(v) for k, v in inner.items()}}
    if kind == "L":
        return {"L": [encode_value(v) for v in inner]}
    return {kind: inner}


def decode_value(value: dict[str, Any]) -> dict[str, Any]:
    """The inverse of :func:`encode_value`."""
    ((kind, inner),) = value.items()
    if kind == "B":
        return {"B": base64.b64decode(inner)}
    if kind == "BS":
        return {"BS": [base64.b64decode(b) for b in inner]}
    if kind == "M":
        return {"M": {k: decode_value(v) for k, v in inner.items()}}
    if kind == "L":
        return {"L": [decode_value(v) for v in inner]}
    return {kind: inner}


def encode_item(item: dict[str, Any]) -> dict[str, Any]:
    return {name: encode_value(value) for name, value in item.items()}


def decode_item(item: dict[str, Any]) -> dict[str, Any]:
    return {name: decode_value(value) for name, value in item.items()}


# --- capture -------------------------------------------------------------------------------


def _scan_table(dynamodb: Any, table: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for page in dynamodb.get_paginator("scan").paginate(TableName=table, ConsistentRead=True):
        items.extend(encode_item(item) for item in page.get("Items", []))
    return items


def _table_names(dynamodb: Any) -> list[str]:
    names: list[str] = []
    for page in dynamodb.get_paginator("list_tables").paginate():
        names.extend(page.get("TableNames", []))
    return sorted(names)


def _bucket_objects(s3: Any, bucket: str) -> list[dict[str, Any]]:
    objects: list[dict[str, Any]] = []
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        for entry in page.get("Contents", []):
            got = s3.get_object(Bucket=bucket, Key=entry["Key"])
            objects.append(
                {
                    "key": entry["Key"],
                    "body": base64.b64encode(got["Body"].read()).decode("ascii"),
                    "content_type": got.get("ContentType") or "binary/octet-stream",
                    "metadata": got.get("Metadata") or {},
                }
            )
    return objects


def capture(bucket: str) -> dict[str, Any]:
    """Every table's items and every object of ``bucket``, as one JSON-safe document."""
    dynamodb = aws.client("dynamodb")
    tables = {name: _scan_table(dynamodb, name) for name in _table_names(dynamodb)}
    return {
        "format": FORMAT_VERSION,
        "bucket": bucket,
        "tables": tables,
        "objects": _bucket_objects(aws.client("s3"), bucket),
    }


# --- files ---------------------------------------------------------------------------------


def encode_document(document: dict[str, Any]) -> bytes:
    return json.dumps(document, sort_keys=True, separators=(",", ":")).encode()


def write_atomically(state_dir: Path, payload: bytes) -> Path:
    """Write ``payload`` as the snapshot: temp file in the same dir, fsync, rename."""
    state_dir.mkdir(parents=True, exist_ok=True)
    target = state_dir / SNAPSHOT_FILE
    fd, temp_name = tempfile.mkstemp(prefix=".snapshot-", suffix=".tmp", dir=state_dir)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp_name, target)
    except BaseException:
        Path(temp_name).unlink(missing_ok=True)
        raise
    _fsync_dir(state_dir)
    return target


def _fsync_dir(directory: Path) -> None:
    # The rename is durable only once the directory entry is (POSIX); best effort elsewhere.
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def read_snapshot(state_dir: Path) -> dict[str, Any] | None:
    path = state_dir / SNAPSHOT_FILE
    if not path.exists():
        return None
    document: dict[str, Any] = json.loads(path.read_bytes())
    if document.get("format") != FORMAT_VERSION:
        raise ValueError(f"{path}: unknown snapshot format {document.get('format')!r}")
    return document


# --- restore -------------------------------------------------------------------------------


def _batch_write(dynamodb: Any, table: str, items: list[dict[str, Any]]) -> None:
    for start in range(0, len(items), BATCH_WRITE_MAX):
        requests = [
            {"PutRequest": {"Item": decode_item(i)}} for i in items[start : start + BATCH_WRITE_MAX]
        ]
        pending: dict[str, Any] = {table: requests}
        for attempt in range(8):
            unprocessed = dynamodb.batch_write_item(RequestItems=pending).get("UnprocessedItems")
            if not unprocessed:
                break
            pending = unprocessed
            time.sleep(0.05 * 2**attempt)  # backoff on throttling (real endpoints only)
        else:
            raise RuntimeError(f"restore of {table}: items left unprocessed after retries")


def restore(document: dict[str, Any]) -> RestoreSummary:
    """Write a captured document back. Tables that no longer exist are skipped (and named)."""
    dynamodb = aws.client("dynamodb")
    existing = set(_table_names(dynamodb))
    skipped = sorted(name for name in document["tables"] if name not in existing)
    items = 0
    for table, table_items in document["tables"].items():
        if table in existing:
            _batch_write(dynamodb, table, table_items)
            items += len(table_items)
    s3 = aws.client("s3")
    for obj in document["objects"]:
        s3.put_object(
            Bucket=document["bucket"],
            Key=obj["key"],
            Body=base64.b64decode(obj["body"]),
            ContentType=obj["content_type"],
            Metadata=obj["metadata"],
        )
    if skipped:
        log.warning("snapshot tables with no table to restore into: %s", ", ".join(skipped))
    return RestoreSummary(items=items, objects=len(document["objects"]), skipped_tables=skipped)


#: What a restart reports, by table short name: what a user created, not DynamoDB rows.
RESOURCE_TABLES = (
    ("projects", "project", "projects"),
    ("agents", "agent", "agents"),
    ("datasets", "dataset", "datasets"),
    ("dataset-items", "dataset item", "dataset items"),
    ("evals", "eval", "evals"),
    ("runs", "run", "runs"),
)


def count_resources(table_name: Callable[[str], str]) -> dict[str, int]:
    """How many projects, agents, datasets, dataset items, evals and runs there are now."""
    dynamodb = aws.client("dynamodb")
    counts: dict[str, int] = {}
    for short_name, _, plural in RESOURCE_TABLES:
        pages = dynamodb.get_paginator("scan").paginate(
            TableName=table_name(short_name), Select="COUNT"
        )
        counts[plural] = sum(page["Count"] for page in pages)
    return counts


def describe_counts(counts: dict[str, int]) -> str:
    """``1 project, 2 agents, ...`` (every kind, zeros included: nothing reads as missing)."""
    words = []
    for _, singular, plural in RESOURCE_TABLES:
        count = counts.get(plural, 0)
        words.append(f"{count} {singular if count == 1 else plural}")
    return ", ".join(words)


class SnapshotWriter:
    """Captures and writes snapshots, skipping the write when nothing changed."""

    def __init__(self, state_dir: Path, bucket: str) -> None:
        self.state_dir = state_dir
        self.bucket = bucket
        self._last_digest: str | None = None
        self.written = 0

    def save(self) -> bool:
        """Capture and write if the content changed. Returns whether a file was written."""
        return self.write(capture(self.bucket))

    def write(self, document: dict[str, Any], journal_from: int | None = None) -> bool:
        """Write a captured document (unless it is the one written last).

        ``journal_from``: the first journal segment *not* in this capture (the runtime
        froze mutations and cut the journal there before capturing); a restart restores
        the snapshot, then replays segments from that one on.
        """
        if journal_from is not None:
            document["journal_from"] = journal_from
        digest = hashlib.sha256(encode_document(document)).hexdigest()
        if digest == self._last_digest:
            return False
        document["taken_at"] = now_iso()  # after hashing: an unchanged state is not rewritten
        write_atomically(self.state_dir, encode_document(document))
        self._last_digest = digest
        self.written += 1
        return True
