"""A run's ``aggregate_scores``, accumulated one item at a time.

The aggregator streams: it keeps counters per group and per scorer, never the items,
so a 100,000-item run settles in the same memory as a 10-item one. It is a partial
aggregate (``stats.partial``): the aggregators of a run's item ranges merge into the
run's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from chalicelib.stats.intervals import wilson_interval
from chalicelib.stats.outcomes import ItemOutcome
from chalicelib.stats.partial import keyed_from_state, keyed_state, merge_keyed
from chalicelib.stats.tally import ScorerTally
from chalicelib.stats.trials import TrialTally


@dataclass
class _PassTally:
    """Pass counts and per-scorer figures over a set of scored items."""

    scored: int = 0
    passed: int = 0
    scorers: dict[str, ScorerTally] = field(default_factory=dict)

    def add(self, item: ItemOutcome) -> None:
        self.scored += 1
        self.passed += bool(item.passed)
        scorers = self.scorers
        for key, score in item.scores.items():
            tally = scorers.get(key)
            if tally is None:
                tally = scorers[key] = ScorerTally()
            tally.add(score.score, score.passed)

    def pass_rate(self) -> float | None:
        return self.passed / self.scored if self.scored else None

    def summary(self) -> dict[str, Any]:
        return {
            "pass_rate": self.pass_rate(),
            "pass_rate_interval": wilson_interval(self.passed, self.scored),
            "scored_item_count": self.scored,
            "scorers": {key: self.scorers[key].summary() for key in sorted(self.scorers)},
        }

    def merge(self, other: _PassTally) -> None:
        self.scored += other.scored
        self.passed += other.passed
        merge_keyed(self.scorers, other.scorers)

    def state(self) -> dict[str, Any]:
        return {
            "scored": self.scored,
            "passed": self.passed,
            "scorers": keyed_state(self.scorers),
        }

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> _PassTally:
        return cls(
            scored=int(state["scored"]),
            passed=int(state["passed"]),
            scorers=keyed_from_state(ScorerTally, state["scorers"]),
        )


class RunAggregator:
    """Feed every item of a run with :meth:`add`, then read :meth:`result`.

    ``pass_rate`` is passed items over non-errored items. Errored items are counted
    (``errored_item_count``) and nothing else: no figure, no group. With ``group_by``
    set, each scored item whose ``group`` is a string rolls up under that label too;
    any other scored item is ungrouped. With ``trials > 1`` the result also holds the
    trial-aware figures (``trials``: :class:`~chalicelib.stats.trials.TrialTally`).
    """

    def __init__(self, group_by: str | None, trials: int = 1) -> None:
        self.group_by = group_by
        self.trials = trials
        self.trial_tally = TrialTally()
        self._run = _PassTally()
        self._groups: dict[str, _PassTally] = {}
        self._ungrouped = 0
        self._errored = 0
        self._flaky = 0

    def add(self, item: ItemOutcome) -> None:
        if item.errored:
            self._errored += 1
            return
        self._run.add(item)
        self._flaky += item.flaky
        # One trial an item: the figures are not reported, so not paid for either.
        counts = item.trial_counts() if self.trials > 1 else None
        if counts is not None:
            self.trial_tally.add(*counts)
        if self.group_by is None:
            return
        if isinstance(item.group, str):
            group = self._groups.get(item.group)
            if group is None:
                group = self._groups[item.group] = _PassTally()
            group.add(item)
        else:
            self._ungrouped += 1

    def merge(self, other: RunAggregator) -> None:
        """Fold in the aggregator of another share of the run's items."""
        if other.group_by != self.group_by:
            raise ValueError(f"cannot merge group_by {other.group_by!r} into {self.group_by!r}")
        if other.trials != self.trials:
            raise ValueError(f"cannot merge trials {other.trials} into {self.trials}")
        self._run.merge(other._run)
        self.trial_tally.merge(other.trial_tally)
        merge_keyed(self._groups, other._groups)
        self._ungrouped += other._ungrouped
        self._errored += other._errored
        self._flaky += other._flaky

    def state(self) -> dict[str, Any]:
        return {
            "group_by": self.group_by,
            "trials": self.trials,
            "trial_tally": self.trial_tally.to_state(),
            "run": self._run.state(),
            "groups": keyed_state(self._groups),
            "ungrouped": self._ungrouped,
            "errored": self._errored,
            "flaky": self._flaky,
        }

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> RunAggregator:
        made = cls(state["group_by"], int(state["trials"]))
        made.trial_tally = TrialTally.from_state(state["trial_tally"])
        made._run = _PassTally.from_state(state["run"])
        made._groups = keyed_from_state(_PassTally, state["groups"])
        made._ungrouped = int(state["ungrouped"])
        made._errored = int(state["errored"])
        made._flaky = int(state["flaky"])
        return made

    def result(self) -> dict[str, Any]:
        """The aggregate so far; may be called any number of times."""
        run = self._run.summary()
        aggregate: dict[str, Any] = {
            "pass_rate": run["pass_rate"],
            "pass_rate_interval": run["pass_rate_interval"],
            "scored_item_count": run["scored_item_count"],
            "errored_item_count": self._errored,
            "scorers": run["scorers"],
            "flaky_item_count": self._flaky,
        }
        if self.trials > 1:
            aggregate["trials"] = self.trial_tally.summary(self.trials)
        if self.group_by is not None:
            aggregate["grouping"] = {
                "group_by": self.group_by,
                "groups": {label: self._groups[label].summary() for label in sorted(self._groups)},
                "ungrouped_item_count": self._ungrouped,
            }
        return aggregate
