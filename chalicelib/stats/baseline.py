"""How a run moved against its baseline, streamed pair by pair.

Both runs' items arrive sorted by ``dataset_item_id``; :func:`merge_join` pairs them without
loading either run, and :class:`BaselineComparator` keeps counters only (a partial
aggregate, ``stats.partial``: the comparators of item ranges merge into the run's). Every delta is
over the item intersection (scorable in both runs), recomputing both sides there, so
items added or removed since the baseline show up in the counts, not in the deltas.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

from chalicelib.stats.holm import holm_adjust
from chalicelib.stats.mcnemar import mcnemar_exact_p
from chalicelib.stats.outcomes import ItemOutcome
from chalicelib.stats.paired_interval import paired_delta_interval
from chalicelib.stats.partial import keyed_from_state, keyed_state, merge_keyed
from chalicelib.stats.tally import PairedScorerTally
from chalicelib.stats.trials import PairedTrialTally

Pair = tuple[ItemOutcome | None, ItemOutcome | None]
T = TypeVar("T")


def _dataset_item_id(item: Any) -> str:
    key: str = item.dataset_item_id
    return key


def _strictly_sorted(items: Iterable[T], side: str, key: Callable[[T], str]) -> Iterator[T]:
    previous: str | None = None
    for item in items:
        item_id = key(item)
        if previous is not None and item_id <= previous:
            raise ValueError(
                f"{side} items not sorted by dataset_item_id: {item_id!r} after {previous!r}"
            )
        previous = item_id
        yield item


def merge_join(
    current: Iterable[T], baseline: Iterable[T], key: Callable[[T], str] = _dataset_item_id
) -> Iterator[tuple[T | None, T | None]]:
    """Full outer join of two item streams sorted by ``dataset_item_id`` (unique per stream).

    Yields ``(current, baseline)``; the side that lacks the item is ``None``. ``key`` reads
    the id of a stream element (settle joins lists of trials before it reduces them).
    """
    current_items = _strictly_sorted(current, "current", key)
    baseline_items = _strictly_sorted(baseline, "baseline", key)
    here = next(current_items, None)
    there = next(baseline_items, None)
    while here is not None or there is not None:
        if there is None or (here is not None and key(here) < key(there)):
            yield here, None
            here = next(current_items, None)
        elif here is None or key(there) < key(here):
            yield None, there
            there = next(baseline_items, None)
        else:
            yield here, there
            here = next(current_items, None)
            there = next(baseline_items, None)


_COUNTERS = ("compared", "added", "removed", "improved", "regressed", "both_passed")


@dataclass
class _Comparison:
    """Counters of one comparison: the whole run, or one group."""

    compared: int = 0
    added: int = 0
    removed: int = 0
    improved: int = 0
    regressed: int = 0
    #: Passed in both runs: with the flips, the paired table the delta's interval reads.
    both_passed: int = 0
    scorers: dict[str, PairedScorerTally] = field(default_factory=dict)

    def add_compared(self, here: ItemOutcome, there: ItemOutcome) -> None:
        self.compared += 1
        if here.passed != there.passed:
            if here.passed:
                self.improved += 1
            else:
                self.regressed += 1
        elif here.passed:
            self.both_passed += 1
        there_scores = there.scores
        for key, here_score in here.scores.items():
            there_score = there_scores.get(key)
            # A scorer only one side ran on this item has nothing to pair with.
            if there_score is None:
                continue
            paired = self.scorers.get(key)
            if paired is None:
                paired = self.scorers[key] = PairedScorerTally()
            paired.add(here_score.score, here_score.passed, there_score.score, there_score.passed)

    def merge(self, other: _Comparison) -> None:
        for name in _COUNTERS:
            setattr(self, name, getattr(self, name) + getattr(other, name))
        merge_keyed(self.scorers, other.scorers)

    def state(self) -> dict[str, Any]:
        counters: dict[str, Any] = {name: getattr(self, name) for name in _COUNTERS}
        return {**counters, "scorers": keyed_state(self.scorers)}

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> _Comparison:
        made = cls(scorers=keyed_from_state(PairedScorerTally, state["scorers"]))
        for name in _COUNTERS:
            setattr(made, name, int(state[name]))
        return made

    def p_value(self) -> float | None:
        return mcnemar_exact_p(self.improved, self.regressed) if self.compared else None

    def summary(self) -> dict[str, Any]:
        return {
            "compared_item_count": self.compared,
            "added_item_count": self.added,
            "removed_item_count": self.removed,
            "pass_rate_delta": (
                (self.improved - self.regressed) / self.compared if self.compared else None
            ),
            "pass_rate_delta_interval": paired_delta_interval(
                self.both_passed, self.improved, self.regressed, self.compared
            ),
            "flipped": {"improved": self.improved, "regressed": self.regressed},
            "both_passed_count": self.both_passed,
            "p_value": self.p_value(),
            "scorers": {key: self.scorers[key].summary() for key in sorted(self.scorers)},
        }


def _scorable(item: ItemOutcome | None) -> bool:
    return item is not None and not item.errored


class BaselineComparator:
    """Feed every ``(current, baseline)`` pair from :func:`merge_join`, then :meth:`result`.

    A pair's group is the current side's label (the baseline's when the item is gone
    from the current run); only a string names a group. Each group gets the same figures
    as the run plus ``p_value_adjusted``, Holm-adjusted across the groups, and so does each
    continuous scorer's signed-rank test (``wilcoxon.p_value_adjusted``).

    With ``trials > 1`` (either run's) the result also holds ``trials``: the compared items'
    trial pass proportions paired (:class:`~chalicelib.stats.trials.PairedTrialTally`), which
    the regression gate then reads; a compared item whose trial counts are unknown on a
    side is left out of them and counted in ``trials.uncounted_item_count``.
    """

    def __init__(self, baseline_run_id: str, group_by: str | None, trials: int = 1) -> None:
        self.baseline_run_id = baseline_run_id
        self.group_by = group_by
        self.trials = trials
        self.trial_pairs = PairedTrialTally()
        self.uncounted = 0
        self._run = _Comparison()
        self._groups: dict[str, _Comparison] = {}
        self._ungrouped_compared = 0

    def add(self, current: ItemOutcome | None, baseline: ItemOutcome | None) -> None:
        if current is None and baseline is None:
            raise ValueError("a pair needs at least one side")
        if (
            current is not None
            and baseline is not None
            and current.dataset_item_id != baseline.dataset_item_id
        ):
            raise ValueError(
                "paired different items: "
                f"{current.dataset_item_id!r} / {baseline.dataset_item_id!r}"
            )
        group = self._group_of(current, baseline)
        targets = (self._run,) if group is None else (self._run, group)
        if (
            current is not None
            and baseline is not None
            and not (current.errored or baseline.errored)
        ):
            for comparison in targets:
                comparison.add_compared(current, baseline)
            if self.trials > 1:
                self._add_trials(current, baseline)
            if self.group_by is not None and group is None:
                self._ungrouped_compared += 1
        elif _scorable(current):
            for comparison in targets:
                comparison.added += 1
        elif _scorable(baseline):
            for comparison in targets:
                comparison.removed += 1

    def _add_trials(self, current: ItemOutcome, baseline: ItemOutcome) -> None:
        here, there = current.trial_counts(), baseline.trial_counts()
        if here is None or there is None:
            self.uncounted += 1
        else:
            self.trial_pairs.add(here, there)

    def merge(self, other: BaselineComparator) -> None:
        """Fold in the comparator of another share of both runs' items."""
        mine = (self.baseline_run_id, self.group_by, self.trials)
        if (other.baseline_run_id, other.group_by, other.trials) != mine:
            raise ValueError("cannot merge comparisons with another baseline or group_by")
        self._run.merge(other._run)
        merge_keyed(self._groups, other._groups)
        self._ungrouped_compared += other._ungrouped_compared
        self.trial_pairs.merge(other.trial_pairs)
        self.uncounted += other.uncounted

    def state(self) -> dict[str, Any]:
        return {
            "baseline_run_id": self.baseline_run_id,
            "group_by": self.group_by,
            "trials": self.trials,
            "run": self._run.state(),
            "groups": keyed_state(self._groups),
            "ungrouped_compared": self._ungrouped_compared,
            "trial_pairs": self.trial_pairs.to_state(),
            "uncounted": self.uncounted,
        }

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> BaselineComparator:
        made = cls(state["baseline_run_id"], state["group_by"], int(state["trials"]))
        made._run = _Comparison.from_state(state["run"])
        made._groups = keyed_from_state(_Comparison, state["groups"])
        made._ungrouped_compared = int(state["ungrouped_compared"])
        made.trial_pairs = PairedTrialTally.from_state(state["trial_pairs"])
        made.uncounted = int(state["uncounted"])
        return made

    def _group_of(
        self, current: ItemOutcome | None, baseline: ItemOutcome | None
    ) -> _Comparison | None:
        if self.group_by is None:
            return None
        side = current if current is not None else baseline
        label = side.group if side is not None else None
        if not isinstance(label, str):
            return None
        group = self._groups.get(label)
        if group is None:
            group = self._groups[label] = _Comparison()
        return group

    def result(self) -> dict[str, Any]:
        """The comparison so far; may be called any number of times."""
        comparison: dict[str, Any] = {"run_id": self.baseline_run_id, **self._run.summary()}
        if self.trials > 1:
            trials = self.trial_pairs.summary()
            trials["uncounted_item_count"] = self.uncounted
            comparison["trials"] = trials
        if self.group_by is not None:
            comparison["grouping"] = {
                "group_by": self.group_by,
                "groups": self._group_summaries(),
                "ungrouped_item_count": self._ungrouped_compared,
            }
        return comparison

    def _group_summaries(self) -> dict[str, dict[str, Any]]:
        labels = sorted(self._groups)
        summaries = [self._groups[label].summary() for label in labels]
        adjusted = holm_adjust([summary["p_value"] for summary in summaries])
        for summary, p_adjusted in zip(summaries, adjusted, strict=True):
            summary["p_value_adjusted"] = p_adjusted
        _adjust_signed_rank_tests(summaries)
        return dict(zip(labels, summaries, strict=True))


def _adjust_signed_rank_tests(summaries: list[dict[str, Any]]) -> None:
    """Per continuous scorer, Holm across the groups that test it: the same family-wise
    guard the groups' McNemar p-values get (a group where the scorer is 0/1 or absent is
    not in that scorer's family)."""
    tests_by_scorer: dict[str, list[dict[str, Any]]] = {}
    for summary in summaries:
        for key, figures in summary["scorers"].items():
            if "wilcoxon" in figures:
                tests_by_scorer.setdefault(key, []).append(figures["wilcoxon"])
    for tests in tests_by_scorer.values():
        adjusted = holm_adjust([test["p_value"] for test in tests])
        for test, p_adjusted in zip(tests, adjusted, strict=True):
            test["p_value_adjusted"] = p_adjusted
