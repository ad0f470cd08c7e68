"""An early-stop run's order and work messages: a seeded permutation, reproducible, and id-only
work carrying the baseline's outcome of each item."""

from __future__ import annotations

import json

from chalicelib.engine import early_stop, messages


def test_the_order_is_a_permutation_fixed_by_the_seed() -> None:
    ids = [f"dsit_{n:016d}" for n in range(500)]
    order = early_stop.shuffled(7, ids)
    assert sorted(order) == ids and order != ids
    assert early_stop.shuffled(7, reversed(ids)) == order  # the input order does not matter
    assert early_stop.shuffled(8, ids) != order
    # Its prefixes are random samples: the first 100 are spread over the whole set.
    positions = sorted(ids.index(item) for item in order[:100])
    assert positions[0] < 50 and positions[-1] > 450


def test_a_derived_seed_is_stable_per_run_id() -> None:
    assert early_stop.derived_seed("evrun_abc") == early_stop.derived_seed("evrun_abc")
    assert early_stop.derived_seed("evrun_abc") != early_stop.derived_seed("evrun_abd")
    assert 0 <= early_stop.derived_seed("evrun_abc") < 2**48


def test_id_work_round_trips_with_the_baseline_outcome() -> None:
    work = [(f"dsit_{n}", 1, [True, False, None][n % 3]) for n in range(23)]
    bodies = list(messages.id_work_messages("evrun_x", work))
    assert [count for _, count in bodies] == [10, 10, 3]
    decoded = [item for body, _ in bodies for item in messages.decode_work(body)]
    assert [(w.dataset_item_id, w.trial, w.baseline_passed) for w in decoded] == work
    assert all(w.item is None and w.run_id == "evrun_x" for w in decoded)
    assert "baseline_passed" not in json.loads(bodies[0][0])["work"][2]  # None: absent
