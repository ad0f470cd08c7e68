"""Settle's accumulators are partial aggregates: merging the partials of any split of a
run's items (each carried through JSON, as a sliced settle stores them in S3) gives
exactly what one pass over the whole run gives, figure for figure, float for float."""

from __future__ import annotations

import itertools
import json
import math
import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chalicelib.engine.settle_state import SettlePartial
from chalicelib.engine.spend import SpendTally
from chalicelib.stats import (
    BaselineComparator,
    CompensatedSum,
    ItemOutcome,
    RunAggregator,
    ScorerScore,
    TrialOutcome,
    reduce_trials,
)
from chalicelib.store.outcome_digest import DigestPart

scores = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)
#: A trial: None when it errored, else each scorer's (score, passed).
trial = st.none() | st.dictionaries(
    st.sampled_from(["contains", "judge", "exact"]), st.tuples(scores, st.booleans()), max_size=3
)
usage_entry = st.fixed_dictionaries(
    {
        "source": st.sampled_from(["eval", "eval_judge", "embedding"]),
        "input_tokens": st.integers(0, 5000),
        "output_tokens": st.integers(0, 5000),
        "cost_usd": st.floats(min_value=0, max_value=0.05, allow_nan=False),
    }
)
#: One item: its label, its trials in the current run and in the baseline (None: absent
#: from that run), the usage of each current trial, and whether the spend guard skipped it.
item = st.tuples(
    st.sampled_from(["a", "b", "c", 7, None]),
    st.none() | st.lists(trial, min_size=1, max_size=3),
    st.none() | st.lists(trial, min_size=1, max_size=3),
    st.lists(usage_entry, max_size=2),
    st.booleans(),
)

Pair = tuple[ItemOutcome | None, ItemOutcome | None, list[dict[str, Any]], str | None]


def _outcome(item_id: str, trials: list[Any] | None, reducer: str, label: Any) -> Any:
    if trials is None:
        return None
    outcomes = [
        TrialOutcome(
            dataset_item_id=item_id,
            trial=number,
            errored=t is None,
            scores=tuple(ScorerScore(k, s, p) for k, (s, p) in (t or {}).items()),
        )
        for number, t in enumerate(trials, start=1)
    ]
    return reduce_trials(outcomes, reducer, group=label)


def _pairs(items: list[Any], reducer: str) -> list[Pair]:
    pairs: list[Pair] = []
    for number, (label, here, there, usage, skipped) in enumerate(items):
        item_id = f"dsit_{number:05d}"
        current = _outcome(item_id, here, reducer, label)
        before = _outcome(item_id, there, "all", label)
        if current is None and before is None:
            continue
        error = "BUDGET_EXCEEDED" if skipped and current is not None else None
        pairs.append((current, before, usage if current is not None else [], error))
    return pairs


def _fresh(group_by: str | None) -> SettlePartial:
    return SettlePartial(
        {
            "aggregate": RunAggregator(group_by),
            "usage": SpendTally(),
            "baseline": BaselineComparator("evrun_baseline", group_by),
        }
    )


def _fed(pairs: list[Pair], group_by: str | None, part: int) -> SettlePartial:
    partial = _fresh(group_by)
    partial.digest_parts = [DigestPart(f"part-{part}", "a", "b", len(pairs))]
    for current, before, usage, error in pairs:
        if current is not None:
            partial.spend.add_usage(usage, error)
        for feed, accumulator in partial.feeders():
            feed(accumulator, current, before)
    return partial


def _through_json(partial: SettlePartial) -> SettlePartial:
    """As a slice stores its partial and the combine reads it back."""
    return SettlePartial.from_state(json.loads(json.dumps(partial.state(), allow_nan=False)))


@settings(max_examples=300, deadline=None)
@given(
    items=st.lists(item, max_size=40),
    cuts=st.lists(st.integers(0, 40), max_size=6),
    grouped=st.booleans(),
    reducer=st.sampled_from(["all", "any", "majority"]),
)
def test_merging_the_partials_of_a_split_equals_one_pass(
    items: list[Any], cuts: list[int], grouped: bool, reducer: str
) -> None:
    group_by = "kind" if grouped else None
    pairs = _pairs(items, reducer)
    whole = _fed(pairs, group_by, 0).figures()

    edges = [0, *sorted(min(cut, len(pairs)) for cut in cuts), len(pairs)]
    slices = [pairs[lo:hi] for lo, hi in itertools.pairwise(edges)]
    partials = [_through_json(_fed(share, group_by, n)) for n, share in enumerate(slices)]
    combined = partials[0]
    for partial in partials[1:]:
        combined.merge(partial)

    assert combined.figures() == whole
    assert [p.key for p in combined.digest_parts] == [f"part-{n}" for n in range(len(slices))]


@settings(max_examples=200, deadline=None)
@given(items=st.lists(item, min_size=1, max_size=30), seed=st.integers(0, 2**32))
def test_accumulators_merge_in_any_order(items: list[Any], seed: int) -> None:
    """The statistics do not depend on which slice finished first."""
    pairs = _pairs(items, "majority")
    partials = [_fed([pair], "kind", n) for n, pair in enumerate(pairs)]
    random.Random(seed).shuffle(partials)
    combined = _fresh("kind")
    for partial in partials:
        combined.merge(partial)
    assert combined.figures() == _fed(pairs, "kind", 0).figures()


@given(values=st.lists(st.floats(-1e6, 1e6, allow_nan=False), max_size=60), cut=st.integers(0, 60))
def test_a_compensated_sum_is_exact_however_it_is_split(values: list[float], cut: int) -> None:
    left, right = CompensatedSum(), CompensatedSum()
    for value in values[:cut]:
        left.add(value)
    for value in values[cut:]:
        right.add(value)
    left.merge(CompensatedSum.from_state(json.loads(json.dumps(right.state()))))
    assert left.value == math.fsum(values)


def test_one_pass_of_tenths_is_exact() -> None:
    total = CompensatedSum()
    for _ in range(10):
        total.add(0.1)
    assert total.value == 1.0


def test_merging_leaves_the_other_partial_as_it_was() -> None:
    here, there = RunAggregator("kind"), RunAggregator("kind")
    there.add(ItemOutcome("dsit_1", False, True, {"x": ScorerScore("x", 0.5, True)}, group="a"))
    before = there.state()
    here.merge(there)
    here.add(ItemOutcome("dsit_2", False, False, {"x": ScorerScore("x", 0.25, False)}, group="a"))
    assert there.state() == before
    assert here.result()["grouping"]["groups"]["a"]["scored_item_count"] == 2


def test_partials_of_other_runs_do_not_merge() -> None:
    with pytest.raises(ValueError, match="group_by"):
        RunAggregator("kind").merge(RunAggregator(None))
    with pytest.raises(ValueError, match="baseline"):
        BaselineComparator("evrun_a", None).merge(BaselineComparator("evrun_b", None))
    without_baseline = SettlePartial({"aggregate": RunAggregator(None), "usage": SpendTally()})
    with pytest.raises(ValueError, match="cannot merge settle partials"):
        without_baseline.merge(_fresh(None))


def test_a_partial_naming_an_unknown_accumulator_is_refused() -> None:
    state = _fresh(None).state()
    state["accumulators"]["wilcoxon_from_the_future"] = {}
    with pytest.raises(ValueError, match="unknown accumulators"):
        SettlePartial.from_state(state)
