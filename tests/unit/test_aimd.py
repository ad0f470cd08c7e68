"""A run's adaptive concurrency (pure): slow start, additive increase, one halving per round,
and the retry quota."""

from __future__ import annotations

from chalicelib.engine.aimd import INITIAL_WINDOW, AimdWindow, RetryQuota, quota_for


def test_it_starts_with_a_few_calls_and_never_more_than_the_limit() -> None:
    assert AimdWindow(40).limit == INITIAL_WINDOW
    assert AimdWindow(2).limit == 2
    assert AimdWindow(0).limit == 1


def test_slow_start_adds_a_call_per_success_up_to_the_limit() -> None:
    window = AimdWindow(40)
    for finished in range(1, 37):
        window.succeeded()
        assert window.limit == INITIAL_WINDOW + finished
    for _ in range(100):
        window.succeeded()
    assert window.limit == 40


def test_congestion_halves_the_window_and_growth_then_is_additive() -> None:
    window = AimdWindow(40)
    for _ in range(36):
        window.succeeded()
    assert window.congested(started_epoch=0)
    assert window.limit == 20
    for _ in range(19):  # about one round of calls at 20 adds one call, not twenty
        window.succeeded()
    assert window.limit == 20
    for _ in range(2):
        window.succeeded()
    assert window.limit == 21


def test_a_burst_of_congestion_from_one_round_halves_once() -> None:
    window = AimdWindow(40)
    for _ in range(36):
        window.succeeded()
    epoch = window.epoch
    assert window.congested(epoch)
    assert not any(window.congested(epoch) for _ in range(30))  # started before the halving
    assert window.limit == 20
    assert window.congested(window.epoch)  # a call started after it: halves again
    assert window.limit == 10


def test_the_window_never_falls_below_one_call() -> None:
    window = AimdWindow(40)
    for _ in range(20):
        window.congested(window.epoch)
    assert window.limit == 1
    window.succeeded()  # above the threshold: additive, one call per round of calls
    assert window.limit == 2
    limits = []
    for _ in range(3):
        window.succeeded()
        limits.append(window.limit)
    assert limits == [2, 2, 3]  # 2 -> 2.5 -> 2.9 -> 3.24


def test_the_retry_quota_is_spent_by_retries_and_refilled_by_answers() -> None:
    quota = RetryQuota(3)
    assert [quota.take() for _ in range(4)] == [True, True, True, False]
    quota.answered()
    assert quota.take() and not quota.take()
    for _ in range(10):
        quota.answered()
    assert quota.tokens == 3  # never above its capacity
    assert quota_for(40) == 80 and quota_for(1) == 10


def test_a_window_resumes_where_the_last_run_against_its_agent_left_it() -> None:
    earlier = AimdWindow(40)
    for _ in range(100):
        earlier.succeeded()
    assert earlier.learned() == (40.0, None)  # never congested: no threshold to pass on
    resumed = AimdWindow.resuming(40, earlier.learned())
    assert resumed.limit == 40
    assert AimdWindow.resuming(40, None).limit == INITIAL_WINDOW  # nothing learned yet


def test_a_resumed_window_keeps_to_its_own_run_s_limit() -> None:
    assert AimdWindow.resuming(10, (40.0, None)).limit == 10
    smaller = AimdWindow.resuming(200, (40.0, None))
    assert smaller.limit == 40
    for _ in range(40):  # no congestion yet: it goes on slow-starting to its own limit
        smaller.succeeded()
    assert smaller.limit == 80


def test_a_resumed_window_keeps_the_congestion_its_agent_met() -> None:
    earlier = AimdWindow(40)
    for _ in range(36):
        earlier.succeeded()
    earlier.congested(earlier.epoch)
    assert earlier.learned() == (20.0, 20.0)
    resumed = AimdWindow.resuming(40, earlier.learned())
    assert resumed.limit == 20
    for _ in range(19):  # above the threshold it met: additive, one call per round
        resumed.succeeded()
    assert resumed.limit == 20
