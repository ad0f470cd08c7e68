"""The snapshot file that carries the stand-in's tables and bucket across restarts.

moto keeps everything in memory. ``<state dir>/snapshot.json`` holds every table's items
(DynamoDB JSON, binary values in base64) and every object of pawl's bucket, with the
journal segment it was cut at (``journal_from``); it is written atomically (temp file,
fsync, rename), so a crash mid-write leaves the previous one intact. The stand-in takes and
restores it itself, against moto's models and off the request path
(``local/standin_state.py``); this module is the file's format. SQS messages are not
captured: in-flight runs are re-driven instead (see ``docs/local-runtime.md``).

Writes between snapshots are not lost: the stand-in journals each one before answering
(``local/journal.py``), so a snapshot is compaction, not the durability mechanism.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

SNAPSHOT_FILE = "snapshot.json"
FORMAT_VERSION = 1


@dataclass(frozen=True)
class RestoreSummary:
    items: int
    objects: int
    skipped_tables: list[str]


# --- files ---------------------------------------------------------------------------------


def encode_document(document: dict[str, Any]) -> bytes:
    return json.dumps(document, separators=(",", ":")).encode()


def write_atomically(state_dir: Path, payload: bytes) -> Path:
    """Write ``payload`` as the snapshot: temp file in the same dir, fsync, rename."""
    return write_atomically_with(state_dir, lambda handle: handle.write(payload))


def write_atomically_with(state_dir: Path, write: Callable[[BinaryIO], object]) -> Path:
    """Let ``write`` stream the snapshot into a temp file in the same dir; fsync, rename."""
    state_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    target = state_dir / SNAPSHOT_FILE
    fd, temp_name = tempfile.mkstemp(prefix=".snapshot-", suffix=".tmp", dir=state_dir)
    try:
        with os.fdopen(fd, "wb") as handle:
            write(handle)
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


def snapshot_bytes(state_dir: Path) -> int:
    """The size of the last snapshot written to ``state_dir`` (0: there is none)."""
    try:
        return (state_dir / SNAPSHOT_FILE).stat().st_size
    except FileNotFoundError:
        return 0


def read_snapshot(state_dir: Path) -> dict[str, Any] | None:
    path = state_dir / SNAPSHOT_FILE
    if not path.exists():
        return None
    document: dict[str, Any] = json.loads(path.read_bytes())
    if document.get("format") != FORMAT_VERSION:
        raise ValueError(f"{path}: unknown snapshot format {document.get('format')!r}")
    return document


#: What a restart reports, by table short name: what a user created, not DynamoDB rows.
RESOURCE_TABLES = (
    ("projects", "project", "projects"),
    ("agents", "agent", "agents"),
    ("datasets", "dataset", "datasets"),
    ("dataset-items", "dataset item", "dataset items"),
    ("evals", "eval", "evals"),
    ("runs", "run", "runs"),
)


def count_resources(
    table_name: Callable[[str], str], rows_by_table: dict[str, int]
) -> dict[str, int]:
    """How many projects, agents, datasets, dataset items, evals and runs there are now,
    from the stand-in's own count of each table's rows (``standin_state.row_counts``):
    a Scan would page through moto, which walks the whole table again for every page."""
    return {
        plural: rows_by_table.get(table_name(short_name), 0)
        for short_name, _, plural in RESOURCE_TABLES
    }


def describe_counts(counts: dict[str, int]) -> str:
    """``1 project, 2 agents, ...`` (every kind, zeros included: nothing reads as missing)."""
    words = []
    for _, singular, plural in RESOURCE_TABLES:
        count = counts.get(plural, 0)
        words.append(f"{count} {singular if count == 1 else plural}")
    return ", ".join(words)
