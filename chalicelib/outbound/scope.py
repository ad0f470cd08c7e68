"""What a block of code tells the outbound calls made inside it, and hears back from them.

The engine wraps work in scopes instead of threading arguments through every adapter
(the adapter contract is a published plugin surface, and a model agent's call passes
through ``completions`` and ``openai_http`` first):

- ``listening(listener)``: every attempt of every call made in the block is reported to
  ``listener.attempted(outcome)``. A run's adaptive slots listen for congestion around a
  whole item (agent and judge calls alike); an agent call counts its attempts.
- ``persisting(should_continue, allow_retry)``: the calls made in the block retry
  congestion until their own budget (their ``timeout_s``, counted from the first
  attempt) rather than up to ``PAWL_HTTP_MAX_ATTEMPTS``; they stop retrying as soon as
  ``should_continue()`` is false (a cancelled run: it is asked between attempts and
  while backing off), and make a retry only if ``allow_retry()`` grants it (asked once
  per retry: a run's retry quota).

Scopes live in a context variable: a thread (or task) sees only the scopes it opened.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Protocol, TypeVar

from chalicelib.outbound.retry import Failure


@dataclass(frozen=True)
class AttemptOutcome:
    """One attempt of a call: its HTTP status, or how it failed without one."""

    status: int | None = None
    failure: Failure | None = None
    congestion: bool = False


class AttemptListener(Protocol):
    def attempted(self, outcome: AttemptOutcome) -> None:
        """Called after each attempt, in the calling thread; must not raise."""
        ...


class AttemptCounter:
    """Counts the attempts of the calls made while it listens."""

    def __init__(self) -> None:
        self.attempts = 0

    def attempted(self, outcome: AttemptOutcome) -> None:
        self.attempts += 1


@dataclass(frozen=True)
class Persistence:
    should_continue: Callable[[], bool] | None = None
    allow_retry: Callable[[], bool] | None = None

    def go_on(self) -> bool:
        return self.should_continue is None or bool(self.should_continue())

    def may_retry(self) -> bool:
        return self.go_on() and (self.allow_retry is None or bool(self.allow_retry()))


_listeners: ContextVar[tuple[AttemptListener, ...]] = ContextVar("pawl_outbound_listeners")
_persistence: ContextVar[Persistence | None] = ContextVar("pawl_outbound_persistence")


L = TypeVar("L", bound=AttemptListener)


@contextmanager
def listening(listener: L) -> Iterator[L]:
    token = _listeners.set((*_listeners.get(()), listener))
    try:
        yield listener
    finally:
        _listeners.reset(token)


@contextmanager
def persisting(
    should_continue: Callable[[], bool] | None = None,
    allow_retry: Callable[[], bool] | None = None,
) -> Iterator[Persistence]:
    persistence = Persistence(should_continue, allow_retry)
    token = _persistence.set(persistence)
    try:
        yield persistence
    finally:
        _persistence.reset(token)


def report(outcome: AttemptOutcome) -> None:
    for listener in _listeners.get(()):
        listener.attempted(outcome)


def current_persistence() -> Persistence | None:
    return _persistence.get(None)
