"""The start-up heap is frozen out of the collector's walks where a process serves runs."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from chalicelib import long_lived


@pytest.fixture
def restored_gc() -> Iterator[None]:
    threshold = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*threshold)


def test_freezing_moves_the_heap_out_of_collections_and_spaces_young_ones(
    restored_gc: None,
) -> None:
    gc.unfreeze()
    kept = [object() for _ in range(10)], {"a": [1, 2]}
    long_lived.freeze_start_up_heap()
    assert gc.get_freeze_count() > len(kept)
    assert gc.get_threshold()[0] == long_lived.YOUNG_THRESHOLD
    # A full collection now walks only what was made since.
    assert len(gc.get_objects()) < gc.get_freeze_count()


def test_only_a_lambda_container_freezes_at_import(
    restored_gc: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    gc.unfreeze()
    monkeypatch.delenv("AWS_LAMBDA_FUNCTION_NAME", raising=False)
    long_lived.freeze_in_lambda()
    assert gc.get_freeze_count() == 0
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "pawl-dev-items")
    long_lived.freeze_in_lambda()
    assert gc.get_freeze_count() > 0
