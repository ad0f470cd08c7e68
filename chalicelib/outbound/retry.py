"""When to retry an outbound call and how long to wait (pure).

The rule turns on one question: *may the far side have acted on the request?*

- ``NOT_SENT``: no connection was made (refused, connect timeout, unresolvable, no pool
  slot). Nothing reached the server: always safe to try again.
- ``UNANSWERED``: the connection was made and then reset or closed before a single byte
  of an answer arrived. Almost always the server never read the request (a full listen
  backlog resets it; a keep-alive connection the server had already closed), but a
  server that crashed after acting and before answering looks the same. So it is
  retried only when the request is *repeatable*: an idempotent method (RFC 9110 9.2.2),
  or a caller that says so (an agent call or a completion: repeating one costs a call,
  changes nothing, and carries the item's identity so an agent can recognise it).
- ``PARTIAL``: some of the answer arrived before the failure: the server acted. Never
  retried.
- ``TIMED_OUT``: no answer in time after the request was sent: the server may still be
  working on it (and a second call would cost as much again). Never retried.

Congestion (429, 503, and a connection that failed before any answer) is also what a
run's adaptive concurrency backs off on (``engine.aimd``).
"""

from __future__ import annotations

import enum
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from email.utils import parsedate_to_datetime

import httpx

RETRY_STATUSES = frozenset({429, 502, 503, 504})
#: Statuses that say "too much load, later": retried within a persistent call's budget.
CONGESTION_STATUSES = frozenset({429, 503})
IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE", "TRACE"})
RETRY_AFTER_CAP_S = 30.0
MAX_BACKOFF_S = 30.0
#: A retry within a budget starts only if at least this much of the budget is left for it.
MIN_ATTEMPT_S = 0.25
#: The backoff base after a connection that got no answer, when it is below the configured
#: base: a full listen backlog frees up within milliseconds, and an item that waits half a
#: second holds its whole batch back (1,000 items at concurrency 40: 140 items/s with the
#: 0.5 s base, 187 with this one; bench/modest_server.py). 429/503 keep the configured base.
CONNECTION_BACKOFF_BASE_S = 0.05


class Failure(enum.Enum):
    """How far an attempt that produced no HTTP answer got (see the module docstring)."""

    NOT_SENT = "not_sent"
    UNANSWERED = "unanswered"
    PARTIAL = "partial"
    TIMED_OUT = "timed_out"


def classify(error: httpx.HTTPError, received: int) -> Failure:
    """What a transport error means, given how many answer bytes the attempt had read."""
    if isinstance(error, httpx.ConnectError | httpx.ConnectTimeout | httpx.PoolTimeout):
        return Failure.NOT_SENT
    if isinstance(error, httpx.TimeoutException):
        return Failure.TIMED_OUT
    if isinstance(error, httpx.NetworkError | httpx.RemoteProtocolError) and received == 0:
        return Failure.UNANSWERED
    return Failure.PARTIAL


def is_repeatable(method: str, declared: bool | None) -> bool:
    """Whether a request may be sent again after an ``UNANSWERED`` failure."""
    return declared if declared is not None else method.upper() in IDEMPOTENT_METHODS


def may_retry(failure: Failure, repeatable: bool) -> bool:
    """Whether an attempt that failed this way may be followed by another."""
    return failure is Failure.NOT_SENT or (failure is Failure.UNANSWERED and repeatable)


def is_congestion(status: int | None = None, failure: Failure | None = None) -> bool:
    """Whether an attempt's outcome says the far side is overloaded (back off)."""
    if status is not None:
        return status in CONGESTION_STATUSES
    return failure in (Failure.NOT_SENT, Failure.UNANSWERED)


@dataclass(frozen=True)
class RetryBudget:
    """How long a call may keep trying.

    ``max_attempts`` bounds every retry; a ``deadline`` (monotonic seconds), set when the
    call persists, lifts that bound for congestion (it is retried until the deadline) and
    bounds every other retry too.
    """

    max_attempts: int
    deadline: float | None = None


def retry_delay(
    attempt: int, wanted_s: float, congestion: bool, budget: RetryBudget, now: float
) -> float | None:
    """Seconds to wait before the attempt after ``attempt``, or None to give up."""
    within_attempts = attempt < budget.max_attempts
    if budget.deadline is None:
        return wanted_s if within_attempts else None
    if not (within_attempts or congestion):
        return None
    spare = budget.deadline - now - MIN_ATTEMPT_S
    if spare <= 0:
        return None
    return min(wanted_s, spare)


def connection_backoff_base(configured_s: float) -> float:
    """The backoff base after a connection failure: the configured one, at most 50 ms."""
    return min(configured_s, CONNECTION_BACKOFF_BASE_S)


def backoff_delay(attempt: int, base_s: float, rand: Callable[[], float] = random.random) -> float:
    """Seconds to wait after failed ``attempt`` (1-based): equal jitter on base * 2^(n-1)."""
    ceiling = min(MAX_BACKOFF_S, base_s * 2 ** min(attempt - 1, 64))
    return ceiling / 2 + rand() * ceiling / 2


def retry_after_s(value: str | None, now: float | None = None) -> float | None:
    """Seconds a ``Retry-After`` header asks for (delta-seconds or HTTP date), capped."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return min(float(value), RETRY_AFTER_CAP_S)
    try:
        when = parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError, IndexError):
        return None
    current = time.time() if now is None else now
    return min(max(0.0, when - current), RETRY_AFTER_CAP_S)
