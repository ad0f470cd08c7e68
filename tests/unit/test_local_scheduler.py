"""The local scheduler: EventBridge expressions, CloudWatch-shaped events, trigger-now."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from chalice import Chalice, Cron, Rate
from chalice.app import CloudWatchEvent

from pawl.local.quiesce import Quiesce
from pawl.local.scheduler import (
    Scheduler,
    UnsupportedSchedule,
    aws_cron_to_five_fields,
    parse_expression,
)
from tests.support.triggers import FakeClock

T0 = datetime(2026, 3, 2, 10, 0, 30, tzinfo=UTC)  # a Monday


def test_rates_in_every_spelling() -> None:
    assert parse_expression("rate(1 minute)").next_after(T0) == T0 + timedelta(minutes=1)
    assert parse_expression("rate(5 minutes)").next_after(T0) == T0 + timedelta(minutes=5)
    assert parse_expression("rate(2 hours)").next_after(T0) == T0 + timedelta(hours=2)
    assert parse_expression(Rate(3, unit=Rate.DAYS)).next_after(T0) == T0 + timedelta(days=3)
    assert parse_expression(Rate(1, unit=Rate.MINUTES)).period == timedelta(minutes=1)


def test_eventbridge_cron_becomes_five_field_cron() -> None:
    assert aws_cron_to_five_fields("0 12 * * ? *") == "0 12 * * *"
    # EventBridge counts days of the week 1-7 from Sunday; cron 0-6.
    assert aws_cron_to_five_fields("0 8 ? * 2-6 *") == "0 8 * * 1-5"
    assert aws_cron_to_five_fields("0 8 ? * MON-FRI *") == "0 8 * * MON-FRI"
    assert aws_cron_to_five_fields("0 8 ? * 6#3 *") == "0 8 * * 5#3"
    assert aws_cron_to_five_fields("*/15 * * * ? *") == "*/15 * * * *"


def test_cron_cadence_fires_on_its_minutes() -> None:
    cadence = parse_expression("cron(*/15 * * * ? *)")
    assert cadence.next_after(T0) == datetime(2026, 3, 2, 10, 15, tzinfo=UTC)
    weekday = parse_expression(Cron(0, 9, "?", "*", "2-6", "*"))  # 09:00 Monday to Friday
    assert weekday.next_after(T0) == datetime(2026, 3, 3, 9, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    "expression",
    [
        "every minute",
        "rate(0 minutes)",
        "rate(5 weeks)",
        "cron(0 12 * * ?)",
        "cron(0 1 * * ? 2027)",
    ],
)
def test_unsupported_expressions_are_refused(expression: str) -> None:
    with pytest.raises(UnsupportedSchedule):
        parse_expression(expression)


def scheduled_app(calls: list[dict[str, Any]]) -> Chalice:
    app = Chalice("scheduler-test")

    @app.schedule(Rate(1, unit=Rate.MINUTES))
    def every_minute(event: CloudWatchEvent) -> str:
        calls.append(event.to_dict())
        return "ran"

    @app.schedule("cron(0 3 * * ? *)")
    def nightly(event: CloudWatchEvent) -> None:
        raise RuntimeError("nightly broke")

    return app


def test_trigger_runs_now_with_a_cloudwatch_event() -> None:
    calls: list[dict[str, Any]] = []
    scheduler = Scheduler(scheduled_app(calls), quiesce=Quiesce(), now=FakeClock(T0))
    assert sorted(scheduler.schedules) == ["every_minute", "nightly"]
    assert scheduler.trigger("every_minute") == "ran"
    (event,) = calls
    assert event["detail-type"] == "Scheduled Event"
    assert event["source"] == "aws.events"
    assert event["resources"][0].endswith(":rule/every_minute")
    with pytest.raises(RuntimeError, match="nightly broke"):
        scheduler.trigger("nightly")
    assert scheduler.schedules["nightly"].failures == 1
    with pytest.raises(KeyError):
        scheduler.trigger("missing")


def test_the_thread_fires_a_schedule_when_it_is_due() -> None:
    calls: list[dict[str, Any]] = []
    clock = FakeClock(T0)
    scheduler = Scheduler(scheduled_app(calls), quiesce=Quiesce(), now=clock)
    scheduler.start()
    try:
        assert calls == []
        clock.advance(minutes=1, seconds=1)
        deadline = time.monotonic() + 10
        while not calls and time.monotonic() < deadline:
            time.sleep(0.02)
    finally:
        scheduler.stop()
    assert len(calls) == 1
    assert scheduler.schedules["every_minute"].next_run > clock()
    assert scheduler.schedules["nightly"].runs == 0
