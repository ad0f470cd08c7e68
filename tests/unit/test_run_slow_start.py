"""A run's slots adapt (``engine.concurrency`` over ``engine.aimd``): items start a few at a
time and more as they finish, and a run's ``should_continue`` stops its calls' retries.

No clock is read: each task records how many tasks were in flight and how many had
finished when it started; the window bounds the first by the second whatever the timing.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from chalicelib import outbound, wiring
from chalicelib.engine import concurrency
from chalicelib.engine.aimd import INITIAL_WINDOW
from chalicelib.ids import new_id
from tests.support.raw_servers import dropping

SAFETY_TIMEOUT_S = 1.5


@pytest.fixture(autouse=True)
def quick_backoff(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("PAWL_HTTP_BACKOFF_BASE_S", "0.001")
    wiring.reload_settings()
    yield
    monkeypatch.undo()
    wiring.reload_settings()


class Recorder:
    """Tasks that each hold until more than ``INITIAL_WINDOW`` are in flight (or a safety
    timeout: the first round of a slow start waits it out), so a pool that let more start
    at once would be seen doing it."""

    def __init__(self) -> None:
        self.in_flight = 0
        self.finished = 0
        self.starts: list[tuple[int, int]] = []
        self._changed = threading.Condition()

    def task(self) -> None:
        with self._changed:
            self.in_flight += 1
            self.starts.append((self.in_flight, self.finished))
            self._changed.notify_all()
            self._changed.wait_for(
                lambda: self.in_flight > INITIAL_WINDOW, timeout=SAFETY_TIMEOUT_S
            )
            self.in_flight -= 1
            self.finished += 1


def test_a_run_starts_a_few_items_and_one_more_per_item_finished() -> None:
    recorder = Recorder()
    outcomes = concurrency.run_all(new_id("eval_run"), 40, [recorder.task] * 60)
    assert outcomes == [None] * 60
    assert max(in_flight for in_flight, _ in recorder.starts) > INITIAL_WINDOW  # it grew
    for in_flight, finished in recorder.starts:
        assert in_flight <= INITIAL_WINDOW + finished


def test_should_continue_false_stops_every_retry_of_the_run_s_calls() -> None:
    def call(url: str) -> object:
        return lambda: outbound.post_json(url, {}, timeout_s=5, repeatable=True)

    with dropping(None, "close") as server:
        outcomes = concurrency.run_all(
            new_id("eval_run"), 4, [call(server.url)] * 3, should_continue=lambda: False
        )
    assert all(isinstance(o, outbound.OutboundDropped) for o in outcomes)
    assert "retries stopped" in str(outcomes[0])
    assert server.accepted == 3  # one attempt each


def test_a_run_s_calls_persist_within_their_budget() -> None:
    with dropping(None, "close") as server:
        [outcome] = concurrency.run_all(
            new_id("eval_run"),
            4,
            [lambda: outbound.post_json(server.url, {}, timeout_s=0.5, repeatable=True)],
        )
    assert isinstance(outcome, outbound.OutboundDropped)
    assert outcome.attempts == server.accepted > 3


def test_a_run_resumes_the_window_its_agent_s_last_run_reached() -> None:
    """The second run against the same agent starts every item of a round at once; a run
    against another agent (or naming none) still slow-starts."""
    first = Recorder()
    concurrency.run_all(new_id("eval_run"), 8, [first.task] * 40, agent="agt_a@1")
    assert max(in_flight for in_flight, _ in first.starts) > INITIAL_WINDOW

    class Round(Recorder):
        """Holds each task until all eight are in flight (or the safety timeout)."""

        def task(self) -> None:
            with self._changed:
                self.in_flight += 1
                self.starts.append((self.in_flight, self.finished))
                self._changed.notify_all()
                self._changed.wait_for(lambda: self.in_flight >= 8, timeout=SAFETY_TIMEOUT_S)
                self.in_flight -= 1
                self.finished += 1

    resumed = Round()
    concurrency.run_all(new_id("eval_run"), 8, [resumed.task] * 8, agent="agt_a@1")
    assert [finished for _, finished in resumed.starts] == [0] * 8  # all before any ended
    for agent in ("agt_b@1", None):
        fresh = Recorder()
        concurrency.run_all(new_id("eval_run"), 8, [fresh.task] * 8, agent=agent)
        for in_flight, finished in fresh.starts:
            assert in_flight <= INITIAL_WINDOW + finished


class _HandOffSlots:
    """A run's slots where the batch's thread gets one slot, and then none until every task
    is done: only a pool thread that has just finished a task (``try_acquire``, right after
    its release) can start the next one. Without that hand-off the batch never ends."""

    def __init__(self, tasks: int) -> None:
        self.tasks = tasks
        self.finished = 0
        self.acquired = 0
        self.given_back = 0
        self.all_done = threading.Event()

    def acquire(self) -> int:
        self.acquired += 1
        if self.acquired > 1:
            assert self.all_done.wait(timeout=SAFETY_TIMEOUT_S * 10), "no hand-off"
        return 0

    def try_acquire(self) -> int | None:
        return 0

    def give_back(self) -> None:
        self.given_back += 1

    def run(self, task: object, epoch: int, should_continue: object) -> object:
        assert callable(task)
        outcome = task()
        self.finished += 1
        if self.finished == self.tasks:
            self.all_done.set()
        return outcome


def test_a_pool_thread_that_finished_an_item_starts_the_next_one_itself() -> None:
    threads: list[int] = []
    slots = _HandOffSlots(tasks=12)

    def task(n: int) -> object:
        def run() -> int:
            threads.append(threading.get_ident())
            return n

        return run

    outcomes = concurrency._Batch(slots, [task(n) for n in range(12)], None).run()  # type: ignore[arg-type]
    assert outcomes == list(range(12))  # each task's outcome in its place
    assert len(threads) == 12 and len(set(threads)) == 1  # one lane ran them one after another
    # Given back: the slot the lane took to look for a 13th task, the batch's second one.
    # The lane gives its slot back after recording the last outcome (and yielding the
    # interpreter lock), so the batch may return first: wait for it, bounded.
    deadline = time.monotonic() + SAFETY_TIMEOUT_S
    while slots.given_back < 2 and time.monotonic() < deadline:
        time.sleep(0.001)
    assert (slots.acquired, slots.given_back) == (2, 2)


class _Fatal(BaseException):
    """Not an item's failure (as KeyboardInterrupt is not)."""


def test_what_is_not_an_item_s_failure_reaches_the_batch_s_thread() -> None:
    def fatal() -> None:
        raise _Fatal

    def fine() -> None:
        return None

    with pytest.raises(_Fatal):  # raised there, not left waiting for an outcome
        concurrency.run_all(new_id("eval_run"), 4, [fine, fatal, fine])
    failing = ValueError("an item's own failure")

    def fails() -> None:
        raise failing

    assert concurrency.run_all(new_id("eval_run"), 4, [fine, fails]) == [None, failing]


def test_batches_of_one_run_sharing_its_slots_all_finish_within_its_limit() -> None:
    """Four item workers' batches of the same run, their lanes and batch threads racing for
    three slots: every task runs exactly once, never more than three at a time."""
    run_id = new_id("eval_run")
    guard = threading.Lock()
    in_flight = [0, 0]  # now, most
    ran: list[int] = []

    def task(n: int) -> object:
        def run() -> int:
            with guard:
                in_flight[0] += 1
                in_flight[1] = max(in_flight[1], in_flight[0])
            with guard:
                in_flight[0] -= 1
                ran.append(n)
            return n

        return run

    outcomes: dict[int, list[object]] = {}

    def worker(w: int) -> None:
        tasks = [task(w * 100 + n) for n in range(50)]
        outcomes[w] = concurrency.run_all(run_id, 3, tasks)  # type: ignore[arg-type]

    threads = [threading.Thread(target=worker, args=(w,)) for w in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=SAFETY_TIMEOUT_S * 20)
    assert not any(thread.is_alive() for thread in threads), "a batch never finished"
    assert sorted(ran) == sorted(w * 100 + n for w in range(4) for n in range(50))
    assert all(outcomes[w] == [w * 100 + n for n in range(50)] for w in range(4))
    assert in_flight[1] <= 3
