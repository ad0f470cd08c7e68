"""The whole state of a settle, or of one item range of it: a mergeable partial.

A settle feeds every item of the run (paired with the baseline's) to a set of named
accumulators. :data:`ACCUMULATORS` says, for each, how it is made for a run, fed per
item and read into ``aggregate_scores``; each is a partial aggregate
(``stats.partial.Partial``: ``merge``, ``state``, ``from_state``). A
:class:`SettlePartial` holds one of each plus the outcome-digest parts its range wrote,
and is itself a partial: a sliced settle stores each slice's ``state()`` in S3, and the
combining step rebuilds and merges them in item order without knowing any accumulator.

Adding a figure to settle is one more :class:`Accumulator` in :data:`ACCUMULATORS` (its
class must offer ``merge``/``state``/``from_state``); one pass and the sliced settle then
both compute it, and ``tests/integration/test_sliced_settle.py`` holds them equal.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from chalicelib.domain.runs import RunState
from chalicelib.engine.spend import SpendTally
from chalicelib.stats import BaselineComparator, ItemOutcome, Partial, RunAggregator
from chalicelib.store import runs
from chalicelib.store.outcome_digest import DigestPart

#: What a settle keeps per item pair: the current run's outcome and the baseline's
#: (either None when that run lacks the item; the baseline's always None without one).
Feed = Callable[[Any, ItemOutcome | None, ItemOutcome | None], None]


@dataclass(frozen=True)
class Accumulator:
    """One kind of settle accumulator."""

    name: str
    #: Its class: ``from_state`` rebuilds a stored partial.
    kind: type[Any]
    #: The accumulator for this run, or None when the run has no use for it.
    make: Callable[[RunState], Partial | None]
    #: Called once per item pair, in item order; None: fed another way (``usage``: rows).
    feed: Feed | None
    #: Writes its figures into the aggregate (called in :data:`ACCUMULATORS` order).
    finish: Callable[[Any, dict[str, Any]], None]


def _feed_aggregate(aggregator: RunAggregator, here: ItemOutcome | None, _: Any) -> None:
    if here is not None:
        aggregator.add(here)


def _finish_aggregate(aggregator: RunAggregator, aggregate: dict[str, Any]) -> None:
    aggregate.update(aggregator.result())


def _finish_usage(spend: SpendTally, aggregate: dict[str, Any]) -> None:
    # Errored items count in no figure, but what they spent was spent: usage sums every row.
    aggregate["usage"] = spend.result()


def _make_comparator(state: RunState) -> BaselineComparator | None:
    baseline_id = state.run.baseline_run_id
    if baseline_id is None:
        return None
    # Trial proportions pair whenever either run had repeated trials.
    trials = max(state.snapshot.trials, runs.get_run(baseline_id).snapshot.trials)
    return BaselineComparator(baseline_id, state.snapshot.group_by, trials)


def _finish_comparison(comparator: BaselineComparator, aggregate: dict[str, Any]) -> None:
    aggregate["baseline"] = comparator.result()


ACCUMULATORS: tuple[Accumulator, ...] = (
    Accumulator(
        "aggregate",
        RunAggregator,
        lambda state: RunAggregator(state.snapshot.group_by, state.snapshot.trials),
        _feed_aggregate,
        _finish_aggregate,
    ),
    Accumulator("usage", SpendTally, lambda _: SpendTally(), None, _finish_usage),
    Accumulator(
        "baseline",
        BaselineComparator,
        _make_comparator,
        lambda comparator, here, there: comparator.add(here, there),
        _finish_comparison,
    ),
)
_BY_NAME = {accumulator.name: accumulator for accumulator in ACCUMULATORS}


@dataclass
class SettlePartial:
    """Every accumulator of a settle over some items, and the digest parts they wrote."""

    accumulators: dict[str, Any] = field(default_factory=dict)
    digest_parts: list[DigestPart] = field(default_factory=list)

    @classmethod
    def for_run(cls, state: RunState) -> SettlePartial:
        made = {spec.name: spec.make(state) for spec in ACCUMULATORS}
        return cls({name: value for name, value in made.items() if value is not None})

    @property
    def spend(self) -> SpendTally:
        spend: SpendTally = self.accumulators["usage"]
        return spend

    def feeders(self) -> list[tuple[Feed, Any]]:
        """The per-item feed of each accumulator this run has, with the accumulator."""
        return [
            (spec.feed, self.accumulators[spec.name])
            for spec in ACCUMULATORS
            if spec.feed is not None and spec.name in self.accumulators
        ]

    def merge(self, other: SettlePartial) -> None:
        """Fold in the partial of the *next* item range (digest parts stay in item order)."""
        if self.accumulators.keys() != other.accumulators.keys():
            raise ValueError(
                f"cannot merge settle partials of {sorted(other.accumulators)} into "
                f"{sorted(self.accumulators)}"
            )
        for name, theirs in other.accumulators.items():
            self.accumulators[name].merge(theirs)
        self.digest_parts += other.digest_parts

    def state(self) -> dict[str, Any]:
        return {
            "accumulators": {
                name: self.accumulators[name].state() for name in sorted(self.accumulators)
            },
            "digest_parts": [part._asdict() for part in self.digest_parts],
        }

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> SettlePartial:
        unknown = set(state["accumulators"]) - set(_BY_NAME)
        if unknown:
            raise ValueError(f"settle partial names unknown accumulators {sorted(unknown)}")
        return cls(
            {
                name: _BY_NAME[name].kind.from_state(value)
                for name, value in state["accumulators"].items()
            },
            [DigestPart(**part) for part in state["digest_parts"]],
        )

    def figures(self) -> dict[str, Any]:
        """The run's ``aggregate_scores`` from what was accumulated."""
        aggregate: dict[str, Any] = {}
        for spec in ACCUMULATORS:
            if spec.name in self.accumulators:
                spec.finish(self.accumulators[spec.name], aggregate)
        return aggregate
