"""A run's agent calls at once in one process: its ``max_concurrency`` within the server's."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from chalicelib import wiring
from chalicelib.engine.concurrency import process_limit


@pytest.fixture
def deployment(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    yield monkeypatch
    wiring.reload_settings()


def test_a_run_gets_its_own_limit_within_the_published_ceiling(
    deployment: pytest.MonkeyPatch,
) -> None:
    deployment.delenv("PAWL_MAX_CONCURRENCY_LIMIT", raising=False)
    wiring.reload_settings()
    assert process_limit(40) == 40
    assert process_limit(3) == 3
    assert process_limit(500) == 200  # a snapshot can never exceed the ceiling


def test_an_operator_limit_lowers_every_run_and_cannot_raise_the_ceiling(
    deployment: pytest.MonkeyPatch,
) -> None:
    deployment.setenv("PAWL_MAX_CONCURRENCY_LIMIT", "8")
    wiring.reload_settings()
    assert process_limit(40) == 8 and process_limit(3) == 3
    deployment.setenv("PAWL_MAX_CONCURRENCY_LIMIT", "5000")
    wiring.reload_settings()
    assert process_limit(500) == 200
