"""The journal is private: its directory 0700 and every segment 0600, whatever the umask,
including the directory made at the first start, segments made by rotation, and a state
dir an older pawl left world-readable."""

from __future__ import annotations

import os
import stat
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from pawl.local.journal import Journal, Record, segment_numbers, segment_path


@pytest.fixture
def open_umask() -> Iterator[None]:
    previous = os.umask(0o022)  # the usual default: files 0644, directories 0755
    try:
        yield
    finally:
        os.umask(previous)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_journal_made_at_first_start_and_its_rotations_are_private(
    tmp_path: Path, open_umask: None
) -> None:
    directory = tmp_path / "state" / "journal"  # neither exists yet
    journal = Journal(directory, threading.RLock())
    journal.open_segment(1)
    with journal.lock:
        journal.append(Record(meta={"environ": {"HTTP_X_SECRET": "clear"}}, body=b"{}"))
    journal.open_segment(2)  # what a snapshot's cut does
    journal.open_segment(3)
    journal.close()
    assert _mode(directory) == 0o700
    assert segment_numbers(directory) == [1, 2, 3]
    assert [_mode(segment_path(directory, n)) for n in (1, 2, 3)] == [0o600] * 3


def test_an_older_world_readable_journal_is_made_private_at_open(
    tmp_path: Path, open_umask: None
) -> None:
    directory = tmp_path / "journal"
    directory.mkdir(mode=0o755)
    old = segment_path(directory, 4)
    old.write_bytes(b"")
    os.chmod(old, 0o644)
    journal = Journal(directory, threading.RLock())
    journal.open_segment(5)
    journal.close()
    assert _mode(directory) == 0o700
    assert [_mode(segment_path(directory, n)) for n in (4, 5)] == [0o600, 0o600]


def test_a_state_dir_made_at_first_start_is_private(tmp_path: Path, open_umask: None) -> None:
    from pawl.local import server_secret

    state_dir = tmp_path / "fresh-state"
    server_secret.load_or_create(state_dir)  # the first thing a fresh `pawl serve` writes
    assert _mode(state_dir) == 0o700
