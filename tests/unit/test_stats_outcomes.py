"""Trial reduction (pass^k, pass@k, majority), flakiness, errored trials, grouping labels."""

from __future__ import annotations

import pytest

from chalicelib.stats import (
    ItemOutcome,
    ScorerScore,
    TrialOutcome,
    group_consecutive,
    group_label,
    reduce_trials,
)


def trial(
    number: int, *verdicts: tuple[str, float, bool], dataset_item_id: str = "dsit_a"
) -> TrialOutcome:
    scores = tuple(ScorerScore(key, score, passed) for key, score, passed in verdicts)
    return TrialOutcome(dataset_item_id=dataset_item_id, trial=number, errored=False, scores=scores)


def errored(number: int, dataset_item_id: str = "dsit_a") -> TrialOutcome:
    return TrialOutcome(dataset_item_id=dataset_item_id, trial=number, errored=True)


PASS = ("contains", 1.0, True)
FAIL = ("contains", 0.0, False)


def test_trial_passes_only_when_every_scorer_passes() -> None:
    assert trial(0, PASS, ("judge", 0.9, True)).passed
    assert not trial(0, PASS, ("judge", 0.2, False)).passed
    assert not errored(0).passed


@pytest.mark.parametrize(
    ("reducer", "verdicts", "expected"),
    [
        ("all", [True, True, True], True),
        ("all", [True, False, True], False),
        ("any", [False, False, True], True),
        ("any", [False, False, False], False),
        ("majority", [True, True, False], True),
        ("majority", [True, False], False),  # a tie is not a majority
        ("majority", [True, True, False, False], False),
        ("majority", [True, True, True, False], True),
    ],
)
def test_reducers(reducer: str, verdicts: list[bool], expected: bool) -> None:
    trials = [trial(n, PASS if ok else FAIL) for n, ok in enumerate(verdicts)]
    outcome = reduce_trials(trials, reducer)
    assert outcome.passed is expected
    assert outcome.scores["contains"].passed is expected
    assert outcome.flaky is (len(set(verdicts)) > 1)
    assert outcome.trial_count == len(verdicts)


def test_single_trial_is_the_item() -> None:
    outcome = reduce_trials([trial(0, ("judge", 0.7, True))])
    assert outcome == ItemOutcome(
        dataset_item_id="dsit_a",
        errored=False,
        passed=True,
        scores={"judge": ScorerScore("judge", 0.7, True)},
        flaky=False,
        trial_count=1,
        passed_trials=1,
        scored_trials=1,
    )
    assert outcome.trial_counts() == (1, 1)


def test_scores_are_averaged_over_scored_trials_only() -> None:
    trials = [trial(0, ("judge", 0.9, True)), errored(1), trial(2, ("judge", 0.4, False))]
    outcome = reduce_trials(trials, "any")
    assert not outcome.errored
    assert outcome.passed is True
    assert outcome.scores["judge"].score == pytest.approx(0.65)
    assert outcome.flaky
    assert outcome.trial_count == 3


def test_errored_trials_do_not_fail_an_all_reduction() -> None:
    outcome = reduce_trials([errored(0), trial(1, PASS), trial(2, PASS)], "all")
    assert outcome.passed is True
    assert not outcome.flaky


def test_item_is_errored_only_when_every_trial_errored() -> None:
    outcome = reduce_trials([errored(0), errored(1)], "majority", group="refusal")
    assert outcome.errored
    assert outcome.passed is None
    assert outcome.scores == {}
    assert outcome.trial_count == 2
    assert outcome.group == "refusal"


def test_per_scorer_verdicts_reduce_independently() -> None:
    trials = [
        trial(0, ("contains", 1.0, True), ("judge", 0.3, False)),
        trial(1, ("contains", 0.0, False), ("judge", 0.8, True)),
    ]
    outcome = reduce_trials(trials, "any")
    # No single trial passed both scorers...
    assert outcome.passed is False
    # ...though each scorer passed on some trial.
    assert outcome.scores["contains"].passed and outcome.scores["judge"].passed
    assert outcome.scores["judge"].score == pytest.approx(0.55)


def test_refuses_mixed_items_unknown_reducer_and_no_trials() -> None:
    with pytest.raises(ValueError):
        reduce_trials([trial(0, PASS), trial(1, PASS, dataset_item_id="dsit_b")])
    with pytest.raises(ValueError):
        reduce_trials([trial(0, PASS)], "best_of")
    with pytest.raises(ValueError):
        reduce_trials([])


def test_refuses_a_scorer_twice_in_one_trial_and_non_finite_scores() -> None:
    with pytest.raises(ValueError):
        reduce_trials([trial(0, PASS, PASS)])
    with pytest.raises(ValueError):
        ScorerScore("judge", float("nan"), False)


def test_scored_item_must_say_whether_it_passed() -> None:
    with pytest.raises(ValueError):
        ItemOutcome(dataset_item_id="dsit_a", errored=False, passed=None)


def test_group_consecutive_yields_one_list_per_item() -> None:
    stream = iter(
        [
            trial(0, PASS, dataset_item_id="a"),
            trial(1, FAIL, dataset_item_id="a"),
            errored(0, dataset_item_id="b"),
            trial(0, PASS, dataset_item_id="c"),
            trial(1, PASS, dataset_item_id="c"),
            trial(2, PASS, dataset_item_id="c"),
        ]
    )
    groups = list(group_consecutive(stream))
    assert [[t.dataset_item_id for t in group] for group in groups] == [
        ["a", "a"],
        ["b"],
        ["c"] * 3,
    ]
    assert [t.trial for t in groups[2]] == [0, 1, 2]


def test_group_consecutive_refuses_unsorted_input() -> None:
    stream = [trial(0, PASS, dataset_item_id="b"), trial(0, PASS, dataset_item_id="a")]
    with pytest.raises(ValueError):
        list(group_consecutive(stream))


@pytest.mark.parametrize(
    ("metadata", "expected"),
    [
        ({"kind": "refusal"}, "refusal"),
        ({"kind": ""}, ""),
        ({"kind": 7}, None),
        ({"kind": True}, None),
        ({"kind": {"nested": "x"}}, None),
        ({"kind": None}, None),
        ({"other": "x"}, None),
        (None, None),
    ],
)
def test_only_a_string_names_a_group(
    metadata: dict[str, object] | None, expected: str | None
) -> None:
    assert group_label(metadata, "kind") == expected


def test_no_group_by_means_no_label() -> None:
    assert group_label({"kind": "refusal"}, None) is None
