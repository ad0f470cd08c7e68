"""How many of a run's items execute at once: at most the run's ``max_concurrency``, per
process, adapted to what the agent can take.

A run carries ``max_concurrency`` (from its eval, or its start request; at most the
server's ``max_concurrency_limit``). Every worker process shares one pool of agent-call
threads, as large as that limit, and each run gets its own slots in the process: a
batch takes a slot before it submits an item and the item gives it back when done, so
pool threads never wait on a run's slots and one run cannot hold back another's.

The number of slots is not fixed at ``max_concurrency``: it is an AIMD window
(``engine.aimd``) that starts at a few calls, grows as items finish without congestion
and halves when a call meets 429, 503 or a connection that failed before any answer.
While an item runs, its outbound calls report every attempt to the run's slots
(``outbound.listening``) and retry congestion within their budget
(``outbound.persisting``), spending the run's retry quota and stopping as soon as the
caller's ``should_continue()`` says the run is no longer wanted. A run's window and quota
outlive its batches (the most recent ``REMEMBERED_RUNS`` runs), so a queued run does not
slow-start again with every batch; and the window a run reached is kept for its agent (the
most recent ``REMEMBERED_AGENTS`` agents), so the next run against that agent resumes from
it instead of slow-starting (``AimdWindow.resuming``).

The slots are exact within one process (the local runtime: every item worker and every
``wait: true`` start share them). Processes do not share them: on AWS each worker
invocation holds a run to ``max_concurrency`` on its own, and the item event source's
maximum concurrency (per deployment) bounds how many invocations run at once.
docs/engine.md, "Run concurrency", says what is per run and what per deployment.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from functools import partial
from typing import Generic, TypeVar

from chalicelib import outbound
from chalicelib.engine.aimd import AimdWindow, Learned, RetryQuota, quota_for
from chalicelib.errors import ValidationFailed
from chalicelib.settings import get_settings

T = TypeVar("T")

#: Runs whose window and retry quota a process remembers once their batches are done.
REMEMBERED_RUNS = 256
#: Agents whose last window a process remembers for their next run.
REMEMBERED_AGENTS = 256

_pool: ThreadPoolExecutor | None = None
_lock = threading.Lock()

#: Asked between a call's attempts: False once the run's work is no longer wanted.
Continue = Callable[[], bool] | None


class _Slots:
    """One run's slots in this process, shared by every batch of it being worked on."""

    def __init__(self, limit: int, learned: Learned | None = None) -> None:
        self.limit = limit
        self.window = AimdWindow.resuming(limit, learned)
        self.quota = RetryQuota(quota_for(limit))
        self.in_flight = 0
        self.users = 0
        self._changed = threading.Condition()

    def acquire(self) -> int:
        """Wait for a free slot; the window's epoch the item starts in."""
        with self._changed:
            while self.in_flight >= self.window.limit:
                self._changed.wait()
            self.in_flight += 1
            return self.window.epoch

    def try_acquire(self) -> int | None:
        """A slot if one is free now (the window's epoch the item starts in), else None."""
        with self._changed:
            if self.in_flight >= self.window.limit:
                return None
            self.in_flight += 1
            return self.window.epoch

    def release(self, congested: bool) -> None:
        with self._changed:
            self.in_flight -= 1
            if not congested:
                self.window.succeeded()
            self._changed.notify_all()

    def give_back(self) -> None:
        """A slot taken but not used: free again, the window unchanged."""
        with self._changed:
            self.in_flight -= 1
            self._changed.notify_all()

    def congested(self, epoch: int) -> None:
        with self._changed:
            self.window.congested(epoch)

    def answered(self) -> None:
        with self._changed:
            self.quota.answered()

    def learned(self) -> Learned:
        with self._changed:
            return self.window.learned()

    def take_retry(self) -> bool:
        with self._changed:
            return self.quota.take()

    def run(self, task: Callable[[], T], epoch: int, should_continue: Continue) -> T:
        """Execute one item in its slot (taken by the caller), its calls reporting here."""
        calls = _ItemCalls(self, epoch)
        try:
            with (
                outbound.listening(calls),
                outbound.persisting(should_continue=should_continue, allow_retry=self.take_retry),
            ):
                return task()
        finally:
            self.release(calls.congested)


class _ItemCalls:
    """Hears one item's outbound attempts and passes what they say to its run's slots."""

    def __init__(self, slots: _Slots, epoch: int) -> None:
        self.slots = slots
        self.epoch = epoch
        self.congested = False

    def attempted(self, outcome: outbound.AttemptOutcome) -> None:
        if outcome.congestion:
            self.congested = True
            self.slots.congested(self.epoch)
        elif outcome.status is not None:
            self.slots.answered()


_runs: OrderedDict[str, _Slots] = OrderedDict()
#: The window each recent agent's last run left, keyed by the caller's name for the agent.
_agents: OrderedDict[str, Learned] = OrderedDict()


def check_max_concurrency(value: int | None, field_name: str = "max_concurrency") -> None:
    """Refuse a ``max_concurrency`` above the server's limit (400, naming the limit)."""
    limit = get_settings().max_concurrency_limit
    if value is not None and value > limit:
        raise ValidationFailed(
            f"{field_name} is {value}; this server allows at most {limit} "
            "(PAWL_MAX_CONCURRENCY_LIMIT)",
            field=field_name,
            limit=limit,
        )


def process_limit(max_concurrency: int) -> int:
    """The run's agent calls at once in one process: its own limit, within the server's."""
    return max(1, min(max_concurrency, get_settings().max_concurrency_limit))


def _executor() -> ThreadPoolExecutor:
    global _pool
    with _lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(
                get_settings().max_concurrency_limit, thread_name_prefix="pawl-item"
            )
        return _pool


@contextmanager
def _run_slots(run_id: str, limit: int, agent: str | None) -> Iterator[_Slots]:
    with _lock:
        slots = _runs.get(run_id)
        if slots is None or slots.limit != limit:
            learned = _agents.get(agent) if agent is not None else None
            slots = _runs[run_id] = _Slots(limit, learned)
        _runs.move_to_end(run_id)
        slots.users += 1
        _forget_idle_runs()
    try:
        yield slots
    finally:
        learned = slots.learned() if agent is not None else None
        with _lock:
            slots.users -= 1
            if agent is not None and learned is not None:
                _agents[agent] = learned
                _agents.move_to_end(agent)
                while len(_agents) > REMEMBERED_AGENTS:
                    _agents.popitem(last=False)


def _forget_idle_runs() -> None:
    """Keep the most recent runs' state; an idle run past that is forgotten (under _lock)."""
    excess = len(_runs) - REMEMBERED_RUNS
    for run_id in [r for r, s in _runs.items() if s.users == 0][: max(0, excess)]:
        del _runs[run_id]


def run_all(
    run_id: str,
    max_concurrency: int,
    tasks: list[Callable[[], T]],
    should_continue: Continue = None,
    agent: str | None = None,
) -> list[T | Exception]:
    """Run ``tasks`` within the run's slots; each one's result or exception, in order.

    ``should_continue`` (when given) is asked between a call's attempts and while it
    backs off: once it answers False no call of these tasks is retried. ``agent`` names
    what the tasks call: a new run's window resumes from the last one this process saw
    for that name, and leaves its own there (None: the run slow-starts, alone).
    """
    with _run_slots(run_id, process_limit(max_concurrency), agent) as slots:
        if len(tasks) == 1:  # no thread hop for a single item (a sync start's last one)
            epoch = slots.acquire()
            return [_outcome(lambda: slots.run(tasks[0], epoch, should_continue))]
        return _Batch(slots, tasks, should_continue).run()


class _Batch(Generic[T]):
    """One batch's tasks in its run's slots.

    The batch's thread takes a slot and hands the next task to a pool thread. A pool thread
    whose task is done takes the next pending task itself when a slot is free at once, so
    a new agent call starts as soon as one ends: handing it back to the batch's thread cost
    two thread wake-ups (that thread, then a pool thread), and with the interpreter lock
    busy, a round's restarts spread over tens of milliseconds of idle slots.
    """

    def __init__(self, slots: _Slots, tasks: list[Callable[[], T]], should_continue: Continue):
        self.slots = slots
        self.tasks = tasks
        self.should_continue = should_continue
        self.outcomes: list[T | Exception | None] = [None] * len(tasks)
        self._pending = deque(range(len(tasks)))
        self._done = 0
        self._fatal: BaseException | None = None
        self._changed = threading.Condition()

    def run(self) -> list[T | Exception]:
        while True:
            epoch = self.slots.acquire()
            index = self._take()
            if index is None:
                self.slots.give_back()
                break
            try:
                _executor().submit(self._lane, index, epoch)
            except BaseException:
                self.slots.give_back()
                raise
        with self._changed:
            self._changed.wait_for(lambda: self._done == len(self.tasks) or self._fatal is not None)
        if self._fatal is not None:
            raise self._fatal
        return self.outcomes  # type: ignore[return-value]  # every one is set by now

    def _lane(self, index: int, epoch: int) -> None:
        """Run a task in its slot, then the next ones while a slot is free at once."""
        while True:
            run = partial(self.slots.run, self.tasks[index], epoch, self.should_continue)
            try:
                outcome = _outcome(run)
            except BaseException as exc:  # not an item's failure: the batch's thread raises it
                with self._changed:
                    self._fatal = exc
                    self._changed.notify_all()
                raise
            with self._changed:
                self.outcomes[index] = outcome
                self._done += 1
                self._changed.notify_all()
            # The slot first, then the task: a task leaves the pending list only for a
            # thread holding a slot, so none is left behind when the batch's thread,
            # holding one, finds the list empty and stops handing tasks out.
            # Let the batch's other threads run first: with an in-process agent (a python
            # callable) this lane never blocks, and the batch recorder's thread would wait
            # for the interpreter lock until the batch ends, committing nothing meanwhile
            # (no progress shown, an early-stop run's counts frozen for its looks).
            time.sleep(0)
            free = self.slots.try_acquire()
            if free is None:
                return  # the batch's thread takes the next task with the next free slot
            following = self._take()
            if following is None:
                self.slots.give_back()
                return
            index, epoch = following, free

    def _take(self) -> int | None:
        with self._changed:
            return self._pending.popleft() if self._pending else None


def _outcome(call: Callable[[], T]) -> T | Exception:
    try:
        return call()
    except Exception as exc:  # reported per item; the rest of the batch goes on
        return exc


def reset() -> None:
    """Forget the pool (its size comes from the settings), idle runs' windows and what
    earlier runs learned of their agents."""
    global _pool
    with _lock:
        pool, _pool = _pool, None
        for run_id in [r for r, s in _runs.items() if s.users == 0]:
            del _runs[run_id]
        _agents.clear()
    if pool is not None:
        pool.shutdown(wait=False)
