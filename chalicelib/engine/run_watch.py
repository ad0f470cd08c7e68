"""Whether a run is still active, as the process executing its items sees it.

A cancel (or the reaper failing a run) is one write on the run row. A worker that read the
run when its batch began must notice that write while the batch executes, or it goes on
calling the agent for every item of the batch (up to 90), which is what "cancel stops
spending" forbids. Every batch of a run in this process shares one :class:`RunWatch`:

- it starts from the status the batch has just read (no read of its own);
- asked while its last read is older than ``PAWL_RUN_WATCH_REFRESH_S`` (0.5 s), it
  re-reads the status (one
  consistent GetItem of one attribute); the threads that ask meanwhile wait for that read
  rather than make their own, so a run costs this process at most about one read per
  refresh however many batches and items it has in flight, and no read at all
  when its batch is over sooner;
- a cancel or failure written by this process (the local runtime: the API and the workers
  share one) reaches it at once through :func:`note_ended`;
- a terminal status is final: a later "running" (a batch's read that began before the
  cancel) never revives it;
- an ``early_stop`` run's re-read also reads its paired counts and decision, and looks at
  the sequential test (``engine.early_stop``): once decided, the run counts as not active
  here, as if cancelled (its status stays ``running`` until it settles).

The item executor asks before each agent call and before each scorer call
(``RunWatch.active``, handed down as a plain ``should_continue`` callable so lower layers,
such as an outbound retry loop, can ask without importing the engine). A process holds a
watch only while a batch of its run is executing, like ``engine.concurrency``'s slots: the
registry is not a cache, and nothing of it outlives a batch.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from chalicelib.domain.runs import ACTIVE_STATUSES, EarlyStopState
from chalicelib.engine import early_stop
from chalicelib.settings import get_settings
from chalicelib.store import runs

log = logging.getLogger("pawl.engine.run_watch")

#: What a run the store no longer has counts as (it is not active).
GONE = "gone"


class RunWatch:
    """One run's status as this process last saw it; ``active()`` re-reads it when stale."""

    def __init__(self, run_id: str, status: str, stop: EarlyStopState | None = None) -> None:
        self.run_id = run_id
        self._status = status
        #: An early-stop run's test settings; None for any other run (then a re-read is the
        #: status alone).
        self.early_stop = stop
        self._stopped = stop is not None and stop.stopped
        self._read_at = time.monotonic()
        self._state = threading.Lock()
        self._reading = threading.Lock()
        self.users = 0
        #: Status reads this watch made (what it costs; benchmarks and tests count them).
        self.reads = 0

    @property
    def status(self) -> str:
        with self._state:
            return self._status

    @property
    def stopped(self) -> bool:
        """An early-stop run whose test decided: its work not yet started is dropped."""
        with self._state:
            return self._stopped

    def note_stopped(self) -> None:
        with self._state:
            self._stopped = True

    def observe(self, status: str) -> None:
        """A status just read (or written) by this process; an ended run stays ended."""
        with self._state:
            if self._status in ACTIVE_STATUSES:
                self._status = status
            self._read_at = time.monotonic()

    def _fresh(self) -> bool | None:
        """Whether the run is active, if what this watch knows is recent enough to say."""
        with self._state:
            if self._status not in ACTIVE_STATUSES or self._stopped:
                return False
            # A cancel written by another process stops new calls within this, plus a read.
            if time.monotonic() - self._read_at < get_settings().run_watch_refresh_s:
                return True
            return None

    def active(self) -> bool:
        """False once the run is cancelled or otherwise ended (at most one refresh late)."""
        known = self._fresh()
        if known is not None:
            return known
        with self._reading:  # one re-read at a time; the others wait for its answer
            known = self._fresh()
            if known is not None:
                return known
            self.reads += 1
            try:
                status = self._read()
            except Exception:
                # Not knowing is no reason to fail the item: keep the last status, and wait
                # a full interval before asking the store again.
                log.warning("run %s: its status could not be re-read", self.run_id, exc_info=True)
                status = self.status
            self.observe(status)
        return self.status in ACTIVE_STATUSES and not self.stopped

    def _read(self) -> str:
        if self.early_stop is None:
            return runs.read_status(self.run_id) or GONE
        read = runs.read_watch(self.run_id)
        if read is None:
            return GONE
        if (
            read.status in ACTIVE_STATUSES
            and read.early_stop is not None
            and early_stop.look(self.run_id, read.early_stop, read.recorded)
        ):
            self.note_stopped()
        return read.status


_watches: dict[str, RunWatch] = {}
_lock = threading.Lock()


@contextmanager
def watching(run_id: str, status: str, stop: EarlyStopState | None = None) -> Iterator[RunWatch]:
    """The run's watch in this process while a batch of it executes; ``status`` (and, for an
    early-stop run, ``stop``) is what the batch just read."""
    with _lock:
        watch = _watches.get(run_id)
        if watch is None:
            watch = _watches[run_id] = RunWatch(run_id, status, stop)
        watch.users += 1
    watch.observe(status)
    try:
        yield watch
    finally:
        with _lock:
            watch.users -= 1
            if watch.users == 0:
                del _watches[run_id]


def watched_runs() -> list[str]:
    """The runs this process holds a watch for now (a batch of each is executing)."""
    with _lock:
        return sorted(_watches)


def note_ended(run_id: str, status: str) -> None:
    """This process moved the run to a terminal ``status``: its executing batches stop now."""
    with _lock:
        watch = _watches.get(run_id)
    if watch is not None:
        watch.observe(status)


def note_stopped(run_id: str) -> None:
    """An early-stop run was found decided (or decided) by a batch of this process: its
    other batches executing here drop their work from now on, not at their next re-read."""
    with _lock:
        watch = _watches.get(run_id)
    if watch is not None:
        watch.note_stopped()
