"""What the statistics read: one item's outcome, and how repeated trials reduce to it.

These are plain frozen records built by the engine from result rows; nothing here
knows where they came from.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import groupby

REDUCERS = ("all", "any", "majority")


@dataclass(frozen=True, slots=True)
class ScorerScore:
    """One scorer's verdict on one output: ``key`` is the scorer's type or name."""

    key: str
    score: float
    passed: bool

    def __post_init__(self) -> None:
        # A NaN would silently poison every mean it enters.
        if not math.isfinite(self.score):
            raise ValueError(f"score of scorer {self.key!r} must be finite, got {self.score}")


@dataclass(frozen=True, slots=True)
class TrialOutcome:
    """One execution of one item: either errored, or scored by every scorer."""

    dataset_item_id: str
    trial: int
    errored: bool
    scores: tuple[ScorerScore, ...] = ()

    @property
    def passed(self) -> bool:
        """AND of the scorers' verdicts; an errored trial never passes."""
        return not self.errored and all(score.passed for score in self.scores)


@dataclass(frozen=True, slots=True)
class ItemOutcome:
    """One item's outcome in a run, after its trials are reduced.

    An errored item counts in no figure, so its ``passed`` and ``scores`` are ignored;
    a scored item must say whether it passed. ``group`` is the item's label under the
    eval's ``group_by``; anything but a string leaves the item ungrouped.
    """

    dataset_item_id: str
    errored: bool
    passed: bool | None
    scores: Mapping[str, ScorerScore] = field(default_factory=dict)
    flaky: bool = False
    trial_count: int = 1
    group: str | None = None
    #: Trials that passed, and trials that were scored (not errored); None when unknown
    #: (an outcome built without its trials, e.g. from a digest written before they were kept).
    passed_trials: int | None = None
    scored_trials: int | None = None

    def __post_init__(self) -> None:
        if not self.errored and self.passed is None:
            raise ValueError(f"scored item {self.dataset_item_id!r} needs passed=True/False")

    def trial_counts(self) -> tuple[int, int] | None:
        """``(passed trials, scored trials)`` of a scored item, or None when unknown; a
        one-trial outcome built without them is its own single trial."""
        if self.errored:
            return None
        if self.passed_trials is not None and self.scored_trials is not None:
            return self.passed_trials, self.scored_trials
        if self.trial_count == 1:
            return int(bool(self.passed)), 1
        return None


def group_label(metadata: Mapping[str, object] | None, group_by: str | None) -> str | None:
    """The group an item's ``metadata`` names under ``group_by``: only a string counts.

    ``7``, ``True``, an object, a missing key or missing metadata all mean "ungrouped";
    values are never coerced, so ``"1"`` and ``1`` do not merge.
    """
    if group_by is None or metadata is None:
        return None
    value = metadata.get(group_by)
    return value if isinstance(value, str) else None


def _all(flags: Sequence[bool]) -> bool:
    return all(flags)


def _any(flags: Sequence[bool]) -> bool:
    return any(flags)


def _majority(flags: Sequence[bool]) -> bool:
    return 2 * sum(flags) > len(flags)


_REDUCER_FUNCTIONS: dict[str, Callable[[Sequence[bool]], bool]] = {
    "all": _all,
    "any": _any,
    "majority": _majority,
}


def _reduce_scorers(
    scored: Sequence[TrialOutcome], reduce: Callable[[Sequence[bool]], bool]
) -> dict[str, ScorerScore]:
    """Per scorer: mean score over the trials it scored, verdict by the same reducer."""
    scores_by_key: dict[str, list[ScorerScore]] = {}
    for trial in scored:
        seen: set[str] = set()
        for score in trial.scores:
            if score.key in seen:
                raise ValueError(
                    f"trial {trial.trial} of {trial.dataset_item_id!r}: scorer {score.key!r} twice"
                )
            seen.add(score.key)
            scores_by_key.setdefault(score.key, []).append(score)
    return {
        key: ScorerScore(
            key=key,
            score=math.fsum(s.score for s in scores) / len(scores),
            passed=reduce([s.passed for s in scores]),
        )
        for key, scores in scores_by_key.items()
    }


def reduce_trials(
    trials: Sequence[TrialOutcome], reducer: str = "all", group: str | None = None
) -> ItemOutcome:
    """Reduce one item's trials to its outcome.

    ``reducer``: ``"all"`` (pass^k: every scored trial passed), ``"any"`` (pass@k),
    ``"majority"`` (strictly more than half passed). Errored trials are left out; the
    item is errored only when every trial errored. ``flaky`` is set when the scored
    trials disagree on ``passed``.
    """
    if not trials:
        raise ValueError("an item needs at least one trial")
    reduce = _REDUCER_FUNCTIONS.get(reducer)
    if reduce is None:
        raise ValueError(f"reducer must be one of {', '.join(REDUCERS)}, got {reducer!r}")
    dataset_item_id = trials[0].dataset_item_id
    if any(trial.dataset_item_id != dataset_item_id for trial in trials):
        raise ValueError(f"trials of several items passed as one ({dataset_item_id!r} and others)")
    scored = [trial for trial in trials if not trial.errored]
    if not scored:
        return ItemOutcome(
            dataset_item_id=dataset_item_id,
            errored=True,
            passed=None,
            trial_count=len(trials),
            group=group,
        )
    verdicts = [trial.passed for trial in scored]
    return ItemOutcome(
        dataset_item_id=dataset_item_id,
        errored=False,
        passed=reduce(verdicts),
        scores=_reduce_scorers(scored, reduce),
        flaky=len(set(verdicts)) > 1,
        trial_count=len(trials),
        group=group,
        passed_trials=sum(verdicts),
        scored_trials=len(verdicts),
    )


def group_consecutive(trials: Iterable[TrialOutcome]) -> Iterator[list[TrialOutcome]]:
    """Split a stream of trials sorted by ``dataset_item_id`` into one list per item.

    Streams: holds one item's trials at a time. An ``dataset_item_id`` that goes backwards
    means the input was not sorted (an item would be split in two), so it raises.
    """
    previous: str | None = None
    for dataset_item_id, item_trials in groupby(trials, key=lambda trial: trial.dataset_item_id):
        if previous is not None and dataset_item_id <= previous:
            raise ValueError(
                f"trials not sorted by dataset_item_id: {dataset_item_id!r} after {previous!r}"
            )
        previous = dataset_item_id
        yield list(item_trials)
