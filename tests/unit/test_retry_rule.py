"""The outbound retry rule (pure): how far a failed attempt got, and whether to try again."""

from __future__ import annotations

import httpx
import pytest

from chalicelib.outbound.retry import (
    MIN_ATTEMPT_S,
    Failure,
    RetryBudget,
    classify,
    connection_backoff_base,
    is_congestion,
    is_repeatable,
    may_retry,
    retry_delay,
)


@pytest.mark.parametrize(
    ("error", "received", "failure"),
    [
        (httpx.ConnectError("refused"), 0, Failure.NOT_SENT),
        (httpx.ConnectTimeout("slow"), 0, Failure.NOT_SENT),
        (httpx.PoolTimeout("pool"), 0, Failure.NOT_SENT),
        (httpx.ReadError("reset"), 0, Failure.UNANSWERED),
        (httpx.WriteError("broken pipe"), 0, Failure.UNANSWERED),
        (httpx.RemoteProtocolError("Server disconnected"), 0, Failure.UNANSWERED),
        (httpx.ReadError("reset"), 12, Failure.PARTIAL),
        (httpx.RemoteProtocolError("peer closed"), 1, Failure.PARTIAL),
        (httpx.ReadTimeout("slow answer"), 0, Failure.TIMED_OUT),
        (httpx.WriteTimeout("slow upload"), 0, Failure.TIMED_OUT),
        (httpx.DecodingError("bad gzip"), 0, Failure.PARTIAL),
    ],
)
def test_a_transport_error_is_classified_by_how_far_it_got(
    error: httpx.HTTPError, received: int, failure: Failure
) -> None:
    assert classify(error, received) is failure


def test_only_idempotent_methods_are_repeatable_unless_the_caller_says() -> None:
    assert is_repeatable("get", None) and is_repeatable("PUT", None)
    assert not is_repeatable("POST", None) and not is_repeatable("PATCH", None)
    assert is_repeatable("POST", True) and not is_repeatable("GET", False)


@pytest.mark.parametrize(
    ("failure", "repeatable", "retried"),
    [
        (Failure.NOT_SENT, False, True),
        (Failure.NOT_SENT, True, True),
        (Failure.UNANSWERED, True, True),
        (Failure.UNANSWERED, False, False),  # the server may have acted on a POST
        (Failure.PARTIAL, True, False),  # it did act: part of an answer arrived
        (Failure.TIMED_OUT, True, False),  # it may still be working
    ],
)
def test_what_may_be_retried(failure: Failure, repeatable: bool, retried: bool) -> None:
    assert may_retry(failure, repeatable) is retried


def test_congestion_is_429_503_and_connections_that_got_no_answer() -> None:
    assert is_congestion(status=429) and is_congestion(status=503)
    assert not any(is_congestion(status=s) for s in (200, 400, 500, 502, 504))
    assert is_congestion(failure=Failure.NOT_SENT) and is_congestion(failure=Failure.UNANSWERED)
    assert not is_congestion(failure=Failure.PARTIAL)
    assert not is_congestion(failure=Failure.TIMED_OUT)


def test_without_a_deadline_the_attempt_cap_decides() -> None:
    budget = RetryBudget(max_attempts=3)
    assert retry_delay(1, 0.5, True, budget, now=0.0) == 0.5
    assert retry_delay(2, 0.5, False, budget, now=0.0) == 0.5
    assert retry_delay(3, 0.5, True, budget, now=0.0) is None


def test_with_a_deadline_congestion_is_retried_past_the_cap_until_the_budget() -> None:
    budget = RetryBudget(max_attempts=3, deadline=10.0)
    assert retry_delay(7, 0.5, True, budget, now=5.0) == 0.5
    # The wait is cut so that the next attempt keeps MIN_ATTEMPT_S of the budget.
    assert retry_delay(7, 30.0, True, budget, now=5.0) == pytest.approx(5.0 - MIN_ATTEMPT_S)
    assert retry_delay(7, 0.5, True, budget, now=10.0 - MIN_ATTEMPT_S) is None
    assert retry_delay(7, 0.5, True, budget, now=11.0) is None


def test_with_a_deadline_other_retries_keep_the_cap_and_the_budget() -> None:
    budget = RetryBudget(max_attempts=3, deadline=10.0)
    assert retry_delay(2, 0.5, False, budget, now=1.0) == 0.5  # a 502 within the cap
    assert retry_delay(3, 0.5, False, budget, now=1.0) is None
    assert retry_delay(1, 0.5, False, budget, now=9.9) is None


def test_a_connection_failure_backs_off_from_at_most_50_ms() -> None:
    assert connection_backoff_base(0.5) == 0.05
    assert connection_backoff_base(0.001) == 0.001  # a smaller configured base stands
