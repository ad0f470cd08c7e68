"""The journal's record format: whole records read back, a torn or corrupt tail is dropped."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from pawl.local import snapshot
from pawl.local.compaction import CompactionPolicy
from pawl.local.journal import (
    Journal,
    JournalClosed,
    Record,
    pending_segments,
    read_segment,
    segment_numbers,
    segment_path,
)
from pawl.local.journal_wsgi import DROPPED_HEADERS, classify, replay_environ
from pawl.local.journal_wsgi import _record_of as record_of
from pawl.local.standin_state import snapshot_in_background


def _records(count: int) -> list[Record]:
    return [
        Record(meta={"environ": {"PATH_INFO": f"/{n}"}, "n": n}, body=bytes(range(n % 256)) * 3)
        for n in range(count)
    ]


def _journal_with(tmp_path: Path, records: list[Record]) -> Path:
    journal = Journal(tmp_path, threading.RLock())
    journal.open_segment(1)
    with journal.lock:
        for record in records:
            journal.append(record)
    journal.close()
    return segment_path(tmp_path, 1)


def test_records_read_back_in_order(tmp_path: Path) -> None:
    written = _records(20)
    found = read_segment(_journal_with(tmp_path, written))
    assert found.torn_at is None
    assert found.records == written


@pytest.mark.parametrize("cut", [1, 5, 12, 13, 40])
def test_a_torn_last_record_is_dropped(tmp_path: Path, cut: int) -> None:
    written = _records(5)
    path = _journal_with(tmp_path, written)
    whole = path.read_bytes()
    last = written[-1].encode()
    path.write_bytes(whole[: len(whole) - len(last) + min(cut, len(last) - 1)])
    found = read_segment(path)
    assert found.records == written[:-1]
    assert found.torn_at == len(whole) - len(last)


def test_a_zero_filled_or_corrupt_tail_is_not_a_record(tmp_path: Path) -> None:
    written = _records(3)
    path = _journal_with(tmp_path, written)
    whole = path.read_bytes()
    path.write_bytes(whole + b"\x00" * 64)  # a filesystem may extend a file with zeros
    assert read_segment(path).records == written
    flipped = bytearray(whole)
    flipped[-2] ^= 0xFF  # a bit flip inside the last record's body
    path.write_bytes(bytes(flipped))
    assert read_segment(path).records == written[:-1]


def test_a_snapshot_cuts_only_after_a_write_and_compacts_what_it_holds(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "journal", threading.RLock())
    journal.open_segment(3)
    state_dir = tmp_path / "state"
    nothing_new = snapshot_in_background(journal, state_dir, "us-east-1", "no-bucket")
    assert nothing_new["written"] is False and nothing_new["segment"] == 3
    assert not (state_dir / snapshot.SNAPSHOT_FILE).exists()
    with journal.lock:
        journal.append(_records(2)[1])
    taken = snapshot_in_background(journal, state_dir, "us-east-1", "no-bucket")
    assert taken["written"] and taken["segment"] == 4 and taken["dropped"] == 1
    document = snapshot.read_snapshot(state_dir)
    assert document is not None and document["journal_from"] == 4
    assert segment_numbers(tmp_path / "journal") == [4]
    assert [n for n, _ in pending_segments(tmp_path / "journal", 4)] == [4]
    journal.close()
    with pytest.raises(JournalClosed):
        journal.append(_records(1)[0])


def test_a_snapshot_writer_that_fails_is_reported_and_keeps_the_journal(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "journal", threading.RLock())
    journal.open_segment(1)
    with journal.lock:
        journal.append(_records(1)[0])
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("")
    with pytest.raises(RuntimeError, match="snapshot writer"):
        snapshot_in_background(journal, not_a_dir, "us-east-1", "no-bucket")
    # The cut happened, nothing was dropped: a restart replays both segments, and the
    # policy still weighs them.
    assert segment_numbers(tmp_path / "journal") == [1, 2]
    assert journal.bytes_since_cut == segment_path(tmp_path / "journal", 1).stat().st_size > 0
    journal.close()


def test_the_journal_weighs_every_segment_no_snapshot_holds(tmp_path: Path) -> None:
    """Segments on disk at the first open (replayed at start) count, appends count as they
    are written, and a snapshot's cut drops what it holds from the count."""
    directory = tmp_path / "journal"
    replayed = _journal_with(directory, _records(5)).stat().st_size
    journal = Journal(directory, threading.RLock())
    journal.open_segment(2)
    assert journal.bytes_since_cut == replayed
    record = _records(7)[6]
    with journal.lock:
        journal.append(record)
    assert journal.bytes_since_cut == replayed + len(record.encode())
    assert journal.bytes_since_cut == sum(
        segment_path(directory, n).stat().st_size for n in segment_numbers(directory)
    )
    taken = snapshot_in_background(journal, tmp_path / "state", "us-east-1", "no-bucket")
    assert taken["written"] and taken["journal_bytes"] == replayed + len(record.encode())
    assert journal.bytes_since_cut == 0 and segment_numbers(directory) == [3]
    journal.close()


def test_with_a_policy_a_snapshot_waits_for_enough_journal(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "journal", threading.RLock())
    journal.open_segment(1)
    state_dir = tmp_path / "state"
    record = _records(10)[9]
    size = len(record.encode())
    policy = CompactionPolicy(min_journal_bytes=3 * size, journal_ratio=0)
    for _ in range(2):
        with journal.lock:
            journal.append(record)
        reply = snapshot_in_background(journal, state_dir, "us-east-1", "no-bucket", policy=policy)
        assert reply["written"] is False and reply["threshold_bytes"] == 3 * size
    # Without a policy (a clean stop, POST /_local/snapshot) anything new is enough.
    assert snapshot_in_background(journal, state_dir, "us-east-1", "no-bucket")["written"]
    for _ in range(3):
        with journal.lock:
            journal.append(record)
    reply = snapshot_in_background(journal, state_dir, "us-east-1", "no-bucket", policy=policy)
    assert reply["written"] and reply["journal_bytes"] == 3 * size
    journal.close()


def test_what_is_journaled_and_that_credentials_are_not() -> None:
    signed = "AWS4-HMAC-SHA256 Credential=AKIDSECRETISH/20260101/eu-west-1/s3/aws4_request, x"
    s3_put = {
        "REQUEST_METHOD": "PUT",
        "PATH_INFO": "/bucket/key with space",
        "HTTP_AUTHORIZATION": signed,
        "HTTP_X_AMZ_SECURITY_TOKEN": "token",
        "HTTP_X_AMZ_META_K": "v",
        "CONTENT_TYPE": "text/plain",
    }
    assert classify(s3_put) == "write"
    assert classify({**s3_put, "REQUEST_METHOD": "GET"}) == "s3-read"
    assert classify({"HTTP_X_AMZ_TARGET": "DynamoDB_20120810.UpdateItem"}) == "write"
    assert classify({"HTTP_X_AMZ_TARGET": "DynamoDB_20120810.TransactWriteItems"}) == "write"
    assert classify({"HTTP_X_AMZ_TARGET": "DynamoDB_20120810.Query"}) == "pass"
    assert classify({"HTTP_X_AMZ_TARGET": "AmazonSQS.SendMessage"}) == "pass"
    sqs_query = {"REQUEST_METHOD": "POST", "HTTP_AUTHORIZATION": signed.replace("/s3/", "/sqs/")}
    assert classify(sqs_query) == "pass"

    record = record_of(s3_put, b"hello")
    stored = record.encode()
    assert b"AKIDSECRETISH" not in stored and b"token" not in stored
    assert not DROPPED_HEADERS & set(record.meta["environ"])
    environ = replay_environ(Record.decode(stored[12:]))
    assert environ["PATH_INFO"] == "/bucket/key with space"
    assert environ["HTTP_X_AMZ_META_K"] == "v" and environ["CONTENT_TYPE"] == "text/plain"
    assert "/eu-west-1/s3/" in environ["HTTP_AUTHORIZATION"]
    assert environ["wsgi.input"].read() == b"hello"
