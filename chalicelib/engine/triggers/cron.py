"""Strict five-field cron expressions, evaluated in UTC (croniter).

The grammar is :data:`PATTERN`, published as the OpenAPI pattern of ``cron`` and the
first check here, so the document and the server accept exactly the same expressions:
five fields separated by spaces; each a comma list of ``*``, ``*/step``, a value, a range
``a-b``, or either with ``/step``; values in range for their field (day-of-week 0-7),
month and day names (``jan``, ``MON``) as single values or ranges. An expression can be
valid and never come (``0 0 30 2 *``): it is accepted, like cron does, and its
``next_fire_at`` stays null.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

from croniter import CroniterBadDateError, CroniterError, croniter

from chalicelib import clock
from chalicelib.errors import ValidationFailed

_DAY_NAMES = "sun|mon|tue|wed|thu|fri|sat"
_MONTH_NAMES = "jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec"


def _field(value: str, names: str | None = None) -> str:
    number = f"(?:{value})"
    step = "/[1-9][0-9]?"
    item = rf"(?:\*(?:{step})?|{number}(?:-{number})?(?:{step})?"
    if names is not None:
        name = f"(?:{names}|{names.upper()})"
        item += f"|{name}(?:-{name})?"
    item += ")"
    return f"{item}(?:,{item})*"


PATTERN = (
    f"^{_field('[0-5]?[0-9]')}"
    f" +{_field('[01]?[0-9]|2[0-3]')}"
    f" +{_field('0?[1-9]|[12][0-9]|3[01]')}"
    f" +{_field('0?[1-9]|1[0-2]', _MONTH_NAMES)}"
    f" +{_field('[0-7]', _DAY_NAMES)}$"
)
_GRAMMAR = re.compile(PATTERN)


def check(expression: str) -> str:
    """The expression with single spaces, or 400 ``INVALID_CRON_EXPRESSION``."""
    valid = _GRAMMAR.fullmatch(expression) is not None
    if valid:
        try:
            valid = bool(croniter.is_valid(" ".join(expression.split())))
        except (ValueError, KeyError, CroniterError):
            valid = False
    if not valid:
        raise ValidationFailed(
            f"cron {expression!r} is not a valid 5-field cron expression "
            "(minute hour day-of-month month day-of-week, evaluated in UTC)",
            field="cron",
            code="INVALID_CRON_EXPRESSION",
        )
    return " ".join(expression.split())


def next_after(expression: str, moment: datetime) -> str | None:
    """The first slot strictly after ``moment`` (ISO 8601 UTC); None if it never comes."""
    start = moment.astimezone(UTC).replace(tzinfo=None)
    try:
        following: datetime = croniter(expression, start).get_next(datetime)
    except CroniterBadDateError:
        return None
    return clock.iso(following.replace(tzinfo=UTC))
