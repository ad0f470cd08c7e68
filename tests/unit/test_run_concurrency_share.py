"""A run's share of ``max_concurrency`` in one worker process (pure arithmetic on settings)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from chalicelib.engine.concurrency import process_limit
from chalicelib.settings import reset_settings


@pytest.fixture
def deployment(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    yield monkeypatch
    reset_settings()


def _set(monkeypatch: pytest.MonkeyPatch, **values: str) -> None:
    for name, value in values.items():
        monkeypatch.setenv(name, value)
    reset_settings()


def test_locally_one_process_holds_the_whole_limit(deployment: pytest.MonkeyPatch) -> None:
    _set(deployment, PAWL_ITEM_WORKER_INSTANCES="1")
    assert process_limit(40) == 40
    assert process_limit(3, batches_at_most=10) == 3


def test_on_aws_the_limit_is_shared_by_the_workers_that_can_run(
    deployment: pytest.MonkeyPatch,
) -> None:
    _set(deployment, PAWL_ITEM_WORKER_INSTANCES="50")
    assert process_limit(200) == 4  # 50 workers x 4 = 200
    assert process_limit(40) == 1  # never 0: 50 workers x 1 (the deployment's ceiling)
    assert process_limit(40, batches_at_most=2) == 20  # a two-batch run: two workers
    assert process_limit(40, batches_at_most=0) == 40


def test_an_operator_limit_lowers_every_run(deployment: pytest.MonkeyPatch) -> None:
    _set(deployment, PAWL_MAX_CONCURRENCY_LIMIT="8", PAWL_ITEM_WORKER_INSTANCES="1")
    assert process_limit(40) == 8
    _set(deployment, PAWL_MAX_CONCURRENCY_LIMIT="5000")
    assert process_limit(500) == 200  # the published ceiling
