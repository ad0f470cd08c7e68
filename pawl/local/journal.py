"""The stand-in's write-ahead journal: an acknowledged write survives ``kill -9``.

moto keeps its state in memory. In the stand-in's process every mutating DynamoDB
request and every S3 object mutation that moto answered 2xx is appended to an
append-only log and fsynced *before* the answer leaves the process; at the next start,
after the last snapshot is restored, the log is replayed into moto in order
(:mod:`pawl.local.journal_wsgi` does the WSGI side).

The log is a series of numbered segment files (``segment-00000007.wal``). A snapshot
cuts it: under the journal's lock the journal rotates to a new segment N and the stand-in
forks; the child writes the state at that instant as ``snapshot.json`` with
``journal_from: N`` (``local/standin_state.py``), then the segments below N are dropped.
Replay starts at N, so no write is both in the snapshot and replayed (an ``UpdateItem``
``ADD`` applied twice would double a counter).

Each record is ``magic, length, crc32`` then the payload; a crash in the middle of an
append leaves a torn last record, which fails the length or checksum test and is dropped
(it was never acknowledged).

A segment holds what tenants wrote (agent and tool header values among it), so the
directory is ``0700`` and every segment ``0600``, whatever the umask: created that way,
and put back that way at the first open (a state dir from an older pawl had ``0644``).
"""

from __future__ import annotations

import json
import logging
import os
import re
import struct
import threading
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

log = logging.getLogger("pawl.local.journal")

MAGIC = b"pwj1"
_HEADER = struct.Struct("<4sII")  # magic, payload length, crc32 of (length, payload)
_META_LENGTH = struct.Struct("<I")
#: A record larger than this is corruption, not a request (moto's limits are far lower).
MAX_RECORD_BYTES = 64 * 1024 * 1024
_SEGMENT_NAME = re.compile(r"^segment-(\d{8})\.wal$")
#: Only the runtime's user may read the journal (it holds what tenants wrote).
DIRECTORY_MODE = 0o700
SEGMENT_MODE = 0o600


@dataclass(frozen=True)
class Record:
    """One journaled request: what replaying it into moto needs, and nothing secret."""

    meta: dict[str, Any]
    body: bytes

    def encode(self) -> bytes:
        meta = json.dumps(self.meta, separators=(",", ":")).encode()
        payload = _META_LENGTH.pack(len(meta)) + meta + self.body
        length = struct.pack("<I", len(payload))
        return _HEADER.pack(MAGIC, len(payload), zlib.crc32(length + payload)) + payload

    @classmethod
    def decode(cls, payload: bytes) -> Record:
        (meta_length,) = _META_LENGTH.unpack_from(payload)
        meta_end = _META_LENGTH.size + meta_length
        meta = json.loads(payload[_META_LENGTH.size : meta_end])
        return cls(meta=meta, body=payload[meta_end:])


@dataclass
class SegmentRead:
    """What reading one segment found: its records, and whether its tail was torn."""

    records: list[Record] = field(default_factory=list)
    torn_at: int | None = None  # byte offset of the first unreadable record


def read_segment(path: Path) -> SegmentRead:
    """Every whole record of a segment, in order; stops at the first torn or corrupt one."""
    data = path.read_bytes()
    found = SegmentRead()
    offset = 0
    while offset < len(data):
        record, next_offset = _record_at(data, offset)
        if record is None:
            found.torn_at = offset
            break
        found.records.append(record)
        offset = next_offset
    return found


def _record_at(data: bytes, offset: int) -> tuple[Record | None, int]:
    if len(data) - offset < _HEADER.size:
        return None, offset
    magic, length, checksum = _HEADER.unpack_from(data, offset)
    start = offset + _HEADER.size
    end = start + length
    if magic != MAGIC or not 0 < length <= MAX_RECORD_BYTES or end > len(data):
        return None, offset
    payload = data[start:end]
    if zlib.crc32(struct.pack("<I", length) + payload) != checksum:
        return None, offset
    try:
        return Record.decode(payload), end
    except (ValueError, struct.error):
        return None, offset


def segment_path(directory: Path, number: int) -> Path:
    return directory / f"segment-{number:08d}.wal"


def segment_numbers(directory: Path) -> list[int]:
    if not directory.is_dir():
        return []
    numbers = []
    for entry in directory.iterdir():
        match = _SEGMENT_NAME.match(entry.name)
        if match:
            numbers.append(int(match.group(1)))
    return sorted(numbers)


def fsync_dir(directory: Path) -> None:
    """Make a created, renamed or deleted directory entry durable (POSIX)."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def make_private(directory: Path) -> None:
    """Create ``directory`` (and its parents) if needed; it and its segments owner-only."""
    directory.mkdir(mode=DIRECTORY_MODE, parents=True, exist_ok=True)
    os.chmod(directory, DIRECTORY_MODE)  # mkdir's mode is masked by the umask, or ignored
    for number in segment_numbers(directory):
        os.chmod(segment_path(directory, number), SEGMENT_MODE)


def _create_private(path: Path) -> IO[bytes]:
    """A new, empty file only the owner can read (``O_EXCL``: never an existing one)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, SEGMENT_MODE)
    os.fchmod(fd, SEGMENT_MODE)  # the umask cannot widen a mode, but be explicit
    return os.fdopen(fd, "wb")


class JournalClosed(RuntimeError):
    """A mutation arrived while no segment is open (before replay, or after close)."""


class Journal:
    """The open segment, and the lock that orders execution with the log.

    ``lock`` is the one lock every DynamoDB call and every S3 request of the stand-in
    takes (see :mod:`pawl.local.state_lock`). A mutation holds it from
    before moto executes it until its record is fsynced, so the log's order is the
    execution order and no reader can see a write that is not yet durable.
    """

    def __init__(self, directory: Path, lock: threading.RLock) -> None:
        self.directory = directory
        self.lock = lock
        self._file: IO[bytes] | None = None
        #: Set by :meth:`close`: from then on a mutation is refused, not executed.
        self.closed = False
        self.segment: int | None = None
        #: Bytes in each segment on disk, by number (read once at the first open, then
        #: counted as records are appended): what the snapshot policy weighs.
        self.segment_bytes: dict[int, int] | None = None

    # --- writing ---------------------------------------------------------------------

    @property
    def is_open(self) -> bool:
        """False before the runtime's ``open`` (bootstrap and restore are not journaled)."""
        return self._file is not None

    def append(self, record: Record) -> None:
        """Write one record and fsync it. The caller holds ``lock``."""
        if self._file is None:
            raise JournalClosed("the journal is not open")
        encoded = record.encode()
        self._file.write(encoded)
        self._file.flush()
        os.fsync(self._file.fileno())
        if self.segment_bytes is not None and self.segment is not None:
            self.segment_bytes[self.segment] += len(encoded)

    @property
    def bytes_since_cut(self) -> int:
        """The journal a restart would replay: every segment no snapshot holds yet.

        A snapshot's segments are dropped once its file is written, so that is every
        segment still on disk (a failed snapshot drops none: its bytes still count)."""
        with self.lock:
            return sum((self.segment_bytes or {}).values())

    # --- segments --------------------------------------------------------------------

    def open_segment(self, number: int) -> None:
        """Start appending to a new, empty segment ``number``."""
        with self.lock:
            if self.segment_bytes is None:
                make_private(self.directory)
                self.segment_bytes = {
                    old: segment_path(self.directory, old).stat().st_size
                    for old in segment_numbers(self.directory)
                }
            handle = _create_private(segment_path(self.directory, number))
            fsync_dir(self.directory)
            self.segment_bytes[number] = 0
            previous, self._file = self._file, handle
            self.segment = number
            if previous is not None:
                previous.close()

    def drop_below(self, number: int) -> int:
        """Delete the segments a snapshot now holds (numbers below ``number``)."""
        dropped = 0
        for old in segment_numbers(self.directory):
            if old < number and old != self.segment:
                segment_path(self.directory, old).unlink(missing_ok=True)
                with self.lock:  # bytes_since_cut may be summing them
                    if self.segment_bytes is not None:
                        self.segment_bytes.pop(old, None)
                dropped += 1
        if dropped:
            fsync_dir(self.directory)
        return dropped

    def close(self) -> None:
        with self.lock:
            if self._file is not None:
                self._file.close()
            self._file, self.segment = None, None
            self.closed = True


def pending_segments(directory: Path, journal_from: int) -> Iterator[tuple[int, SegmentRead]]:
    """The segments a restart must replay over a snapshot cut at ``journal_from``, in order."""
    for number in segment_numbers(directory):
        if number >= journal_from:
            yield number, read_segment(segment_path(directory, number))
