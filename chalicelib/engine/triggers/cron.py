"""Strict five-field cron expressions, evaluated in UTC (croniter)."""

from __future__ import annotations

from datetime import UTC, datetime

from croniter import CroniterError, croniter

from chalicelib import clock
from chalicelib.errors import ValidationFailed

FIELDS = 5
MAX_LENGTH = 200


def check(expression: str) -> str:
    """The expression, normalised to single spaces; 400 ``INVALID_CRON_EXPRESSION`` if it is
    not exactly five valid fields (croniter also takes six or seven: seconds, years)."""
    fields = expression.split()
    valid = len(expression) <= MAX_LENGTH and len(fields) == FIELDS
    if valid:
        try:
            valid = bool(croniter.is_valid(" ".join(fields)))
            if valid:  # "0 0 30 2 *" parses but never comes: refuse it too
                next_after(" ".join(fields), clock.now())
        except (ValueError, KeyError, CroniterError):
            valid = False
    if not valid:
        raise ValidationFailed(
            f"cron {expression!r} is not a valid 5-field cron expression "
            "(minute hour day-of-month month day-of-week, evaluated in UTC)",
            field="cron",
            code="INVALID_CRON_EXPRESSION",
        )
    return " ".join(fields)


def next_after(expression: str, moment: datetime) -> str:
    """The first slot strictly after ``moment``, as an ISO 8601 UTC timestamp."""
    start = moment.astimezone(UTC).replace(tzinfo=None)
    following: datetime = croniter(expression, start).get_next(datetime)
    return clock.iso(following.replace(tzinfo=UTC))
