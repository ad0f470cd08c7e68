"""The cron and event-pattern grammars: what the document publishes is what the server takes."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest
from croniter import croniter
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chalicelib.engine.triggers import cron, patterns
from chalicelib.errors import ValidationFailed


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.from_regex(cron.PATTERN, fullmatch=True))
def test_every_expression_the_pattern_admits_is_accepted(expression: str) -> None:
    assert croniter.is_valid(" ".join(expression.split()))
    assert cron.check(expression) == " ".join(expression.split())


@pytest.mark.parametrize(
    "expression",
    [
        "",
        "0 3 * * *  ",
        " 0 3 * * *",
        "0 3 * *",
        "0 3 * * * *",
        "60 * * * *",
        "0 24 * * *",
        "0 0 0 * *",
        "0 0 32 * *",
        "0 0 * 13 *",
        "0 0 * * 8",
        "*/0 * * * *",
        "@daily",
        "0 3 * * Mon",
        "0 3 ? * *",
        "0\t3 * * *",
    ],
)
def test_what_the_pattern_refuses_is_refused(expression: str) -> None:
    assert re.fullmatch(cron.PATTERN, expression) is None
    with pytest.raises(ValidationFailed) as refused:
        cron.check(expression)
    assert refused.value.code == "INVALID_CRON_EXPRESSION"


def test_next_slot_is_strictly_after_and_in_utc() -> None:
    at_slot = datetime(2026, 12, 1, 3, 0, tzinfo=UTC)
    assert cron.next_after("0 3 * * *", at_slot) == "2026-12-02T03:00:00.000Z"
    assert cron.next_after("0 0 30 2 *", at_slot) is None


def test_event_patterns_match_as_the_spec_says() -> None:
    assert patterns.matches("*", "agent.version_created")
    assert patterns.matches("eval_run.*", "eval_run.failed")
    assert not patterns.matches("eval_run.*", "agent.version_created")
    assert patterns.matches("eval_run.completed", "eval_run.completed")
    assert not patterns.matches("eval_run.completed", "eval_run.failed")
    # The module page's spelling of the run namespace matches pawl's events too.
    assert patterns.matches("eval_runs.*", "eval_run.failed")
    assert patterns.matches("eval_runs.completed", "eval_run.completed")
    assert not patterns.matches("eval_runs.completed", "eval_run.failed")
    assert not patterns.matches("eval_runs.*", "agent.version_created")
    for pattern in patterns.PATTERNS:  # each one pawl accepts can match one of its events
        assert any(patterns.matches(pattern, e) for e in patterns.REGISTERED_EVENTS)
    for typo in ("eval_run.complete", "eval_runs.created", "agent", "orders.shipped", ""):
        with pytest.raises(ValidationFailed):
            patterns.check(typo)
