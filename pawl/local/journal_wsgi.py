"""The journal's WSGI side in the stand-in: journal mutations, replay them, obey the runtime.

:class:`JournalMiddleware` sits inside the stand-in's authentication and in front of
moto. A request is one of:

- a DynamoDB mutation (any operation not known to be a read: ``PutItem``,
  ``UpdateItem``, ``DeleteItem``, ``BatchWriteItem``, ``TransactWriteItems``, table
  operations, ...) or an S3 mutation (``PUT``/``POST``/``DELETE``: objects, multi-delete):
  executed and, when moto answers 2xx, journaled and fsynced, all under the journal's
  lock, before the answer is returned;
- an S3 read: run under the same lock (DynamoDB reads take it in ``local/state_lock.py``'s layer),
  so it can never see a write that is not yet durable;
- anything else (SQS, which is not persisted): passed through.

What is recorded is what moto reads to replay the request: the method, the path, the
query, the headers except credentials (``Authorization`` is replaced at replay by an
unsigned one naming the same region and service), and the body.
"""

from __future__ import annotations

import io
import logging
import os
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from pawl.local import snapshot, standin_state
from pawl.local.compaction import CompactionPolicy
from pawl.local.journal import (
    Journal,
    Record,
    pending_segments,
    segment_numbers,
    segment_path,
)
from pawl.local.standin_auth import read_body

log = logging.getLogger("pawl.local.journal")

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]

#: DynamoDB operations that change nothing; every other operation is journaled.
DYNAMODB_READS = frozenset(
    {
        "BatchGetItem",
        "DescribeBackup",
        "DescribeContinuousBackups",
        "DescribeContributorInsights",
        "DescribeEndpoints",
        "DescribeExport",
        "DescribeGlobalTable",
        "DescribeGlobalTableSettings",
        "DescribeImport",
        "DescribeKinesisStreamingDestination",
        "DescribeLimits",
        "DescribeTable",
        "DescribeTableReplicaAutoScaling",
        "DescribeTimeToLive",
        "GetItem",
        "GetResourcePolicy",
        "ListBackups",
        "ListContributorInsights",
        "ListExports",
        "ListGlobalTables",
        "ListImports",
        "ListTables",
        "ListTagsOfResource",
        "Query",
        "Scan",
        "TransactGetItems",
    }
)
S3_MUTATING_METHODS = frozenset({"PUT", "POST", "DELETE"})
#: WSGI environ keys a replay restores verbatim (plus the HTTP_* headers kept below).
REPLAYED_ENVIRON = ("REQUEST_METHOD", "PATH_INFO", "QUERY_STRING", "REQUEST_URI", "RAW_URI")
#: Headers never written to the journal: credentials, and what is per-connection.
DROPPED_HEADERS = frozenset(
    {
        "HTTP_AUTHORIZATION",
        "HTTP_X_AMZ_SECURITY_TOKEN",
        "HTTP_X_AMZ_DATE",
        "HTTP_USER_AGENT",
        "HTTP_CONNECTION",
        "HTTP_TRANSFER_ENCODING",
        "HTTP_EXPECT",
        "HTTP_ACCEPT_ENCODING",
        "HTTP_AMZ_SDK_INVOCATION_ID",
        "HTTP_AMZ_SDK_REQUEST",
        "HTTP_CONTENT_LENGTH",
    }
)


def credential_scope(environ: dict[str, Any]) -> tuple[str, str] | None:
    """(region, service) from a SigV4 ``Authorization`` header; None when unsigned."""
    authorization = environ.get("HTTP_AUTHORIZATION", "")
    marker = "Credential="
    start = authorization.find(marker)
    if start < 0:
        return None
    scope = authorization[start + len(marker) :].split(",", 1)[0].split("/")
    if len(scope) < 5:
        return None
    return scope[2], scope[3]


def classify(environ: dict[str, Any]) -> str:
    """``write``, ``s3-read`` or ``pass`` (DynamoDB reads serialize in the state lock's layer)."""
    target = environ.get("HTTP_X_AMZ_TARGET", "")
    if target:
        service, _, operation = target.partition(".")
        if service.startswith("DynamoDB_") and operation not in DYNAMODB_READS:
            return "write"
        return "pass"
    if environ.get("PATH_INFO", "").startswith("/moto-api"):
        return "pass"
    scope = credential_scope(environ)
    if scope is not None and scope[1] != "s3":
        return "pass"
    return "write" if environ.get("REQUEST_METHOD") in S3_MUTATING_METHODS else "s3-read"


def _read_body(environ: dict[str, Any]) -> bytes:
    """The whole request body, put back as a fresh stream of known length moto can read."""
    body = read_body(environ)
    environ.pop("HTTP_TRANSFER_ENCODING", None)
    return body


def _record_of(environ: dict[str, Any], body: bytes) -> Record:
    kept = {key: environ[key] for key in REPLAYED_ENVIRON if key in environ}
    kept.update(
        (key, value)
        for key, value in environ.items()
        if key.startswith("HTTP_") and key not in DROPPED_HEADERS
    )
    if environ.get("CONTENT_TYPE"):
        kept["CONTENT_TYPE"] = environ["CONTENT_TYPE"]
    region, service = credential_scope(environ) or ("us-east-1", "s3")
    meta = {"environ": kept, "region": region, "service": service, "at": time.time()}
    return Record(meta=meta, body=body)


def run_buffered(app: WsgiApp, environ: dict[str, Any]) -> tuple[str, list[Any], bytes]:
    """Call a WSGI app to completion: (status line, headers, whole body)."""
    captured: list[Any] = []
    chunks: list[bytes] = []

    def start_response(status: str, headers: list[Any], exc_info: Any = None) -> Any:
        captured[:] = [status, headers]
        return chunks.append

    result = app(environ, start_response)
    try:
        chunks.extend(result)
    finally:
        close = getattr(result, "close", None)
        if close is not None:
            close()
    return captured[0], captured[1], b"".join(chunks)


#: The answer to a mutation that arrives once the journal is closed (the stand-in stops).
_STOPPING = (
    "503 Service Unavailable",
    [("Content-Type", "application/json")],
    b'{"__type":"ServiceUnavailable","message":"the stand-in is stopping"}',
)


def _succeeded(status: str) -> bool:
    return status[:1] == "2"


class JournalMiddleware:
    """Execute-and-journal in one critical section; see the module docstring."""

    def __init__(self, app: WsgiApp, journal: Journal) -> None:
        self.app = app
        self.journal = journal

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        kind = classify(environ)
        if kind == "pass":
            return self.app(environ, start_response)
        if kind == "s3-read":
            with self.journal.lock:
                status, headers, body = run_buffered(self.app, environ)
        else:
            status, headers, body = self._mutate(environ)
        start_response(status, headers)
        return [body]

    def _mutate(self, environ: dict[str, Any]) -> tuple[str, list[Any], bytes]:
        request_body = _read_body(environ)
        with self.journal.lock:
            if self.journal.closed:
                return _STOPPING
            status, headers, body = run_buffered(self.app, environ)
            if _succeeded(status) and self.journal.is_open:
                try:
                    self.journal.append(_record_of(environ, request_body))
                except BaseException:
                    # The write is applied in memory but not durable, and moto cannot undo
                    # it: stop here (fail-stop) rather than acknowledge it or keep serving
                    # a state the journal does not hold. A restart replays what is durable.
                    log.critical("journal append failed; the stand-in stops", exc_info=True)
                    os._exit(70)
        return status, headers, body


def replay_environ(record: Record) -> dict[str, Any]:
    """A WSGI environ that asks moto exactly what the journaled request asked."""
    meta = record.meta
    authorization = (
        "AWS4-HMAC-SHA256 Credential=pawl-replay/20000101/"
        f"{meta['region']}/{meta['service']}/aws4_request, SignedHeaders=host, Signature=0"
    )
    return {
        "SCRIPT_NAME": "",
        "QUERY_STRING": "",
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "0",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "127.0.0.1",
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": "http",
        "wsgi.input": io.BytesIO(record.body),
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": False,
        "wsgi.multiprocess": False,
        "wsgi.run_once": False,
        **meta["environ"],
        "CONTENT_LENGTH": str(len(record.body)),
        "HTTP_AUTHORIZATION": authorization,
    }


def replay(app: WsgiApp, journal: Journal, journal_from: int) -> dict[str, Any]:
    """Replay every segment from ``journal_from`` into ``app`` (moto, no journal, no auth),
    then open the next segment. Returns a summary for the runtime's log."""
    summary: dict[str, Any] = {"replayed": 0, "refused": 0, "torn": [], "segments": []}
    started, cpu_started, replayed_bytes = time.perf_counter(), time.process_time(), 0
    for number, found in pending_segments(journal.directory, journal_from):
        summary["segments"].append(number)
        replayed_bytes += segment_path(journal.directory, number).stat().st_size
        if found.torn_at is not None:
            log.warning("journal segment %d: torn record at byte %d dropped", number, found.torn_at)
            summary["torn"].append(number)
        for record in found.records:
            status, _, body = run_buffered(app, replay_environ(record))
            summary["replayed"] += 1
            if not _succeeded(status):
                summary["refused"] += 1
                log.error("journal replay: %s answered %s: %s", _label(record), status, body[:200])
    summary["replay_seconds"] = round(time.perf_counter() - started, 3)
    summary["replay_cpu_seconds"] = round(time.process_time() - cpu_started, 3)
    summary["replayed_bytes"] = replayed_bytes
    existing = segment_numbers(journal.directory)
    next_segment = max([journal_from - 1, *existing]) + 1
    journal.open_segment(max(next_segment, 1))
    journal.drop_below(journal_from)
    summary["segment"] = journal.segment
    return summary


def _label(record: Record) -> str:
    environ = record.meta["environ"]
    target = environ.get("HTTP_X_AMZ_TARGET")
    return target or f"{environ.get('REQUEST_METHOD')} {environ.get('PATH_INFO')}"


def _restore(state_dir: str | None, region: str) -> tuple[dict[str, Any] | None, int]:
    """Load ``snapshot.json`` (when there is one) into moto: what was restored, and the
    journal segment to replay from."""
    if not state_dir or not (path := Path(state_dir) / snapshot.SNAPSHOT_FILE).exists():
        return None, 0
    started, cpu_started = time.perf_counter(), time.process_time()
    loaded, document = standin_state.load_file(path, region)
    restored = {
        "items": loaded.items,
        "objects": loaded.objects,
        "skipped_tables": loaded.skipped_tables,
        "taken_at": document.get("taken_at"),
        "seconds": round(time.perf_counter() - started, 3),
        "cpu_seconds": round(time.process_time() - cpu_started, 3),
    }
    return restored, int(document.get("journal_from", 0))


def handle_command(journal: Journal, moto_app: WsgiApp, command: dict[str, Any]) -> dict[str, Any]:
    """One control command from the runtime (over the stand-in's stdin; no HTTP route).

    ``open``: restore ``snapshot`` (a path, when there is one) into moto, replay the journal
    from its cut and start a new segment. ``snapshot``: cut the journal and write the state
    at the cut to ``state_dir`` from a forked child (``local/standin_state.py``); with a
    ``policy`` (``min_journal_bytes``, ``journal_ratio``: ``local/compaction.py``) only when
    it is due. ``count``: every table's rows, read off moto's model."""
    op = command.get("op")
    region = str(command.get("region") or "us-east-1")
    if op == "open":
        restored, journal_from = _restore(command.get("state_dir"), region)
        journal_from = int(command.get("from", journal_from))
        replayed = replay(moto_app, journal, journal_from)
        frozen = standin_state.keep_out_of_collections()
        return {"ok": True, "restored": restored, **replayed, "frozen_objects": frozen}
    if op == "snapshot":
        policy = None
        if command.get("policy") is not None:
            policy = CompactionPolicy(
                min_journal_bytes=int(command["policy"]["min_journal_bytes"]),
                journal_ratio=float(command["policy"]["journal_ratio"]),
            )
        return standin_state.snapshot_in_background(
            journal,
            Path(command["state_dir"]),
            region,
            str(command["bucket"]),
            force=bool(command.get("force")),
            policy=policy,
        )
    if op == "count":
        return {"ok": True, "rows": standin_state.row_counts(region)}
    return {"ok": False, "error": f"unknown command {op!r}"}
