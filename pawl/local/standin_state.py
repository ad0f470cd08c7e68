"""The snapshot, taken and restored inside the stand-in's process, off the request path.

A snapshot used to be the runtime scanning every table and the bucket over HTTP while the
stand-in held every mutation back: at 10,000 items the 16.5 MB state took 11.8 s to
write, and every request and worker waited for it (a run start took 17.6 s); restoring it
went back through ``BatchWriteItem`` calls and took 27.7 s.

Now the stand-in does both against moto's models directly:

- **Taking one** (:func:`snapshot_in_background`): under the journal's lock, which orders
  every write with the log, the journal rotates to segment N and the process forks. The
  child holds a copy-on-write image of moto's state at exactly that cut; it serializes it
  into ``snapshot.json`` (``journal_from: N``, temp file, fsync, rename) and exits. Requests
  wait only for the fork itself (milliseconds; the figure is returned as ``hold_ms``); the
  control thread, not a request, waits for the child, then deletes the segments below N.
- **Restoring one** (:func:`load`): the items go straight into moto's tables and the
  objects into its bucket, before the journal is replayed over them.

The document keeps the format ``snapshot.py`` reads (items in DynamoDB JSON with binary
values in base64, objects with their content type and user metadata). Reading moto's
models ties this module to the moto release the patches are pinned to
(``local/moto_patches.PATCHED_MOTO_VERSION``); ``tests/integration/test_journal_replay.py``
round-trips every attribute type through it.
"""

from __future__ import annotations

import base64
import ctypes
import gc
import json
import os
import signal
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from pawl.local import moto_dynamodb_patches, snapshot, snapshot_stream
from pawl.local.compaction import CompactionPolicy
from pawl.local.journal import Journal, JournalClosed

_META_PREFIX = "x-amz-meta-"


@dataclass
class Loaded:
    """What :func:`load` put back."""

    items: int = 0
    objects: int = 0
    skipped_tables: list[str] = field(default_factory=list)


def _account_backends(backends: Any) -> list[Any]:
    from moto.core import DEFAULT_ACCOUNT_ID

    return [backends[DEFAULT_ACCOUNT_ID]]


def _tables(region: str) -> dict[str, Any]:
    from moto.dynamodb.models import dynamodb_backends

    (account,) = _account_backends(dynamodb_backends)
    tables: dict[str, Any] = account[region].tables
    return tables


def _s3_backend() -> Any:
    from moto.s3.models import s3_backends

    (account,) = _account_backends(s3_backends)
    return account["aws"]


# --- moto's model -> the snapshot document -------------------------------------------------


def wire_value(value: Any) -> dict[str, Any]:
    """One of moto's DynamoTypes as DynamoDB JSON, binary values in base64 (as they came)."""
    kind, inner = value.type, value.value
    if kind == "M":
        return {"M": {name: wire_value(member) for name, member in inner.items()}}
    if kind == "L":
        return {"L": [wire_value(member) for member in inner]}
    if kind == "B":
        return {"B": _base64(inner)}
    if kind == "BS":
        return {"BS": [_base64(member) for member in inner]}
    return {kind: inner}


def _base64(value: str | bytes) -> str:
    return base64.b64encode(value).decode("ascii") if isinstance(value, bytes) else value


def _stored_items(table: Any) -> Iterator[Any]:
    partitions = table.items.values()
    if table.range_key_attr:
        for partition in partitions:
            yield from partition.values()
    else:
        yield from partitions


def _wire_item(item: Any) -> dict[str, Any]:
    return {name: wire_value(value) for name, value in item.attrs.items()}


def _table_items(table: Any) -> list[dict[str, Any]]:
    return [_wire_item(item) for item in _stored_items(table)]


def _bucket_objects(bucket_name: str) -> list[dict[str, Any]]:
    backend = _s3_backend()
    bucket = backend.buckets.get(bucket_name)
    if bucket is None:
        return []
    objects = []
    for name in sorted(bucket.keys):
        key = bucket.keys[name]
        metadata = {str(k).lower(): v for k, v in key.metadata.items()}
        objects.append(
            {
                "key": name,
                "body": base64.b64encode(key.value).decode("ascii"),
                "content_type": metadata.get("content-type") or "binary/octet-stream",
                "metadata": {
                    k[len(_META_PREFIX) :]: v
                    for k, v in metadata.items()
                    if k.startswith(_META_PREFIX)
                },
            }
        )
    return objects


def dump(region: str, bucket: str) -> dict[str, Any]:
    """Every table's items and every object of ``bucket``: the snapshot document."""
    tables = _tables(region)
    return {
        "format": snapshot.FORMAT_VERSION,
        "bucket": bucket,
        "tables": {name: _table_items(tables[name]) for name in sorted(tables)},
        "objects": _bucket_objects(bucket),
    }


def row_counts(region: str) -> dict[str, int]:
    """Every table's row count, by table name, read off moto's model."""
    counts = {}
    for name, table in _tables(region).items():
        partitions = table.items.values()
        counts[name] = sum(map(len, partitions)) if table.range_key_attr else len(partitions)
    return counts


def stream_dump(handle: BinaryIO, region: str, bucket: str, extra: dict[str, Any]) -> None:
    """Write what :func:`dump` returns, plus ``extra``, as JSON into ``handle`` a chunk of
    items at a time: the whole document never exists in memory (at 100,000 items it was
    gigabytes in the forked writer, on top of the copied pages)."""
    tables = _tables(region)
    head = {"format": snapshot.FORMAT_VERSION, "bucket": bucket, **extra}
    handle.write(_json(head)[:-1].encode() + b',"tables":{')
    for index, name in enumerate(sorted(tables)):
        handle.write((b"," if index else b"") + _json(name).encode() + b":[")
        chunk: list[dict[str, Any]] = []
        first = True
        for item in _stored_items(tables[name]):
            chunk.append(_wire_item(item))
            if len(chunk) == _CHUNK_ITEMS:
                first = _write_chunk(handle, chunk, first)
                chunk = []
        _write_chunk(handle, chunk, first)
        handle.write(b"]")
    handle.write(b'},"objects":' + _json(_bucket_objects(bucket)).encode() + b"}")


#: Items encoded per ``json.dumps`` call: one call per item costs more than the encoding.
_CHUNK_ITEMS = 1000


def _write_chunk(handle: BinaryIO, chunk: list[dict[str, Any]], first: bool) -> bool:
    """Append ``chunk``'s items to an open JSON array; returns whether it is still empty."""
    if not chunk:
        return first
    handle.write((b"" if first else b",") + _json(chunk)[1:-1].encode())
    return False


def _json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


# --- the snapshot document -> moto's model -------------------------------------------------


def load(document: dict[str, Any], region: str) -> Loaded:
    """Put a snapshot's items and objects back (tables that no longer exist are skipped)."""
    loaded = Loaded()
    put = _putter(region, loaded)
    for name, items in document["tables"].items():
        put(name, items)
    loaded.objects = _put_objects(document["objects"], document["bucket"])
    return loaded


def load_file(path: Path, region: str) -> tuple[Loaded, dict[str, Any]]:
    """:func:`load` straight from ``snapshot.json``, a chunk of items at a time
    (``local/snapshot_stream.py``); returns what was put back and the file's other members
    (``journal_from``, ``taken_at``, ...)."""
    loaded = Loaded()
    text = path.read_bytes().decode()
    rest = snapshot_stream.read(text, _putter(region, loaded), snapshot.FORMAT_VERSION)
    del text
    if rest.get("format") != snapshot.FORMAT_VERSION:
        raise ValueError(f"{path}: unknown snapshot format {rest.get('format')!r}")
    loaded.objects = _put_objects(rest.get("objects", []), rest["bucket"])
    return loaded, rest


def _putter(region: str, loaded: Loaded) -> Callable[[str, list[dict[str, Any]]], None]:
    tables = _tables(region)

    def put(name: str, items: list[dict[str, Any]]) -> None:
        table = tables.get(name)
        if table is None:
            if name not in loaded.skipped_tables:
                loaded.skipped_tables.append(name)
            return
        _put_stored(table, items)
        loaded.items += len(items)

    return put


def _put_objects(objects: list[dict[str, Any]], bucket: str) -> int:
    backend = _s3_backend()
    for obj in objects:
        key = backend.put_object(bucket, obj["key"], base64.b64decode(obj["body"]))
        user = {_META_PREFIX + name: value for name, value in obj["metadata"].items()}
        key.set_metadata({"Content-Type": obj["content_type"], **user})
    return len(objects)


def _put_stored(table: Any, items: list[dict[str, Any]]) -> None:
    """What moto's ``Table.put_item`` stores, without the checks each item passed when it
    was first written (types, key sizes, the current item, a condition): half the time."""
    from moto.dynamodb.models.dynamo_type import DynamoType, Item

    hash_attr, range_attr = table.hash_key_attr, table.range_key_attr
    partitions = table.items
    for attrs in items:
        hash_value = DynamoType(attrs[hash_attr])
        if range_attr is None:
            partitions[hash_value] = Item(hash_value, None, attrs)
        else:
            range_value = DynamoType(attrs[range_attr])
            partitions[hash_value][range_value] = Item(hash_value, range_value, attrs)
    moto_dynamodb_patches.written(table)  # queries sort what they read anew


# --- taking one ----------------------------------------------------------------------------


def snapshot_in_background(
    journal: Journal,
    state_dir: Path,
    region: str,
    bucket: str,
    force: bool = False,
    policy: CompactionPolicy | None = None,
) -> dict[str, Any]:
    """Cut the journal and write the state at the cut from a forked child; see the module
    docstring. Without ``policy`` it writes when anything was journaled since the last cut
    (``POST /_local/snapshot``, a clean stop); with one, only when the policy says the
    journal since the cut is big enough (the runtime's periodic check). ``force``: write
    regardless (the runtime replayed segments at start that no snapshot holds yet)."""
    with journal.lock:
        if journal.segment is None:
            raise JournalClosed("the journal is not open")
        weighed = _weigh(journal, state_dir, policy)
        if not (force or weighed["due"]):
            return {"ok": True, "written": False, "segment": journal.segment, **weighed}
        journal.open_segment(journal.segment + 1)
        cut = journal.segment
        held_from, parent = time.perf_counter(), os.getpid()
        child = os.fork()
        if child == 0:  # pragma: no cover (the child's outcome is its exit status)
            die_with(parent)
            os._exit(_write_and_exit_status(state_dir, region, bucket, cut))
        hold_ms = (time.perf_counter() - held_from) * 1000
    frozen = keep_out_of_collections()
    started = time.perf_counter()
    _, status = os.waitpid(child, 0)
    if not os.WIFEXITED(status) or os.WEXITSTATUS(status) != 0:
        raise RuntimeError(f"the snapshot writer (pid {child}) failed with status {status}")
    return {
        "ok": True,
        "written": True,
        "segment": cut,
        **weighed,
        "hold_ms": round(hold_ms, 2),
        "frozen_objects": frozen,
        "write_s": round(time.perf_counter() - started, 3),
        "dropped": journal.drop_below(cut),
    }


def keep_out_of_collections() -> int:
    """Move every object the stand-in holds now out of the cyclic collector's reach
    (``gc.freeze``); returns how many are kept out.

    Stored items are freed by reference counting (an item holds no cycle), yet each full
    collection walked all of them: at 100,000 items (3.8 million objects) one took 1.75 s,
    every thread waiting, which was a run start's p99 while a 100k run executed. The state
    is frozen at each snapshot cut and after a restore, so a full collection walks only
    what was stored since (at most the snapshot policy's share of the state). The price: a
    reference cycle among frozen objects that later becomes garbage is not collected;
    stored items form none, and a request's own objects are frozen only if a cut finds
    them in flight: garbage is collected first (a full collection, which after the first
    freeze walks only what was stored since the last one)."""
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()


#: ``prctl`` option: the signal the kernel sends a process when its parent exits (Linux).
_PR_SET_PDEATHSIG = 1


def die_with(parent: int) -> None:
    """In a forked snapshot writer: be killed when the stand-in (``parent``) dies.

    An orphaned writer would otherwise finish later and rename its older snapshot over
    the one the next stand-in wrote after dropping the segments below its own cut: the
    next restart would replay from a cut whose segments are gone. Linux only (``prctl``);
    elsewhere the writer is left as it was. The kernel's "parent" is the forking thread:
    the stand-in's control thread, which waits for the writer, so it never ends first."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # the parent died before the request took hold
        os._exit(1)


def _weigh(journal: Journal, state_dir: Path, policy: CompactionPolicy | None) -> dict[str, Any]:
    """Whether a snapshot is due, with the figures it was decided on. The caller holds the
    journal's lock."""
    journal_bytes = journal.bytes_since_cut
    if policy is None:  # anything no snapshot holds: new writes, or a failed writer's cut
        return {"due": journal_bytes > 0, "journal_bytes": journal_bytes}
    snapshot_bytes = snapshot.snapshot_bytes(state_dir)
    return {
        "due": policy.due(journal_bytes, snapshot_bytes),
        "journal_bytes": journal_bytes,
        "threshold_bytes": policy.threshold(snapshot_bytes),
    }


def _write_and_exit_status(state_dir: Path, region: str, bucket: str, cut: int) -> int:
    """In the forked child: only this thread exists, so take no lock and log nothing (a
    lock another thread held at the fork stays held here forever)."""
    try:
        gc.disable()  # a collection would only touch (and so copy) the parent's pages
        extra = {
            "journal_from": cut,
            "taken_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        snapshot.write_atomically_with(
            state_dir, lambda handle: stream_dump(handle, region, bucket, extra)
        )
    except BaseException:
        return 1
    return 0
