"""Holm step-down adjustment: agreement with statsmodels, and None handling."""

from __future__ import annotations

import gc
import random

import pytest
from statsmodels.stats.multitest import multipletests

from chalicelib.stats import holm_adjust


def test_textbook_case() -> None:
    assert holm_adjust([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])


def test_none_stays_none_and_does_not_count_in_the_family() -> None:
    adjusted = holm_adjust([None, 0.01, None, 0.04])
    assert adjusted[0] is None and adjusted[2] is None
    assert adjusted[1] == pytest.approx(0.02)
    assert adjusted[3] == pytest.approx(0.04)


def test_empty_and_all_none() -> None:
    assert holm_adjust([]) == []
    assert holm_adjust([None, None]) == [None, None]


def test_capped_at_one() -> None:
    assert holm_adjust([0.6, 0.7, 1.0]) == [1.0, 1.0, 1.0]


@pytest.mark.parametrize("bad", [-0.1, 1.1, float("nan")])
def test_values_outside_zero_one_are_refused(bad: float) -> None:
    with pytest.raises(ValueError):
        holm_adjust([0.2, bad])


def test_matches_statsmodels_on_random_families() -> None:
    rng = random.Random(4242)
    # multipletests calls gc.collect() on every call; freezing the objects already
    # alive keeps each collection (and so the test) fast.
    gc.freeze()
    try:
        _compare_random_families(rng, families=800)
    finally:
        gc.unfreeze()


def _compare_random_families(rng: random.Random, families: int) -> None:
    for _ in range(families):
        size = rng.randint(1, 25)
        # Some repeated values, some Nones, some exact 0s and 1s.
        pool = [rng.random() ** 3 for _ in range(max(1, size // 2))] + [0.0, 1.0]
        family = [None if rng.random() < 0.15 else rng.choice(pool) for _ in range(size)]
        present = [p for p in family if p is not None]
        adjusted = holm_adjust(family)
        assert [a is None for a in adjusted] == [p is None for p in family]
        if not present:
            continue
        expected = iter(multipletests(present, method="holm")[1])
        for p_adjusted in adjusted:
            if p_adjusted is not None:
                assert p_adjusted == pytest.approx(next(expected), abs=1e-12)
