"""A run watch's status: fresh reads are believed, an ended run stays ended."""

from __future__ import annotations

from chalicelib.engine import run_watch
from chalicelib.engine.run_watch import RunWatch


def test_a_fresh_status_is_believed_without_a_read() -> None:
    watch = RunWatch("evrun_x", "running")
    assert watch.active() and watch.reads == 0


def test_an_ended_run_stays_ended() -> None:
    watch = RunWatch("evrun_x", "running")
    watch.observe("cancelled")
    assert not watch.active()
    watch.observe("running")  # a batch's read that began before the cancel
    assert not watch.active() and watch.status == "cancelled" and watch.reads == 0


def test_batches_of_one_run_share_its_watch_and_a_cancel_reaches_them() -> None:
    with run_watch.watching("evrun_y", "running") as first:
        with run_watch.watching("evrun_y", "running") as second:
            assert first is second and run_watch.watched_runs() == ["evrun_y"]
            run_watch.note_ended("evrun_y", "cancelled")
            assert not second.active()
        assert run_watch.watched_runs() == ["evrun_y"]  # the first batch still executes
    assert run_watch.watched_runs() == []
    run_watch.note_ended("evrun_y", "cancelled")  # no batch of it here: nothing to tell
