"""Rolling usage events up by one dimension: source, eval, model or day.

Costs are summed as decimals (each event's cost as it was recorded), so a rollup does not
drift from the sum of its events, and rounded to a millionth of a dollar, as a run's
``aggregate_scores.usage`` is. An event the dimension does not apply to (ordinary
traffic has no source, a standalone generation no eval) falls in the ``null`` group, so
the groups always add up to the totals.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal

from chalicelib.domain.usage import (
    GroupBy,
    UsageAggregate,
    UsageEvent,
    UsageGroup,
    UsageTotals,
)
from chalicelib.store import usage
from chalicelib.store.usage import UsageFilter


@dataclass
class _Sum:
    events: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost: Decimal = Decimal(0)

    def add(self, event: UsageEvent) -> None:
        self.events += 1
        self.input_tokens += event.input_tokens
        self.output_tokens += event.output_tokens
        self.cost += Decimal(repr(event.cost_usd))

    def totals(self) -> UsageTotals:
        return UsageTotals(
            event_count=self.events,
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            cost_usd=float(round(self.cost, 6)),
        )


def group_key(event: UsageEvent, group_by: GroupBy) -> str | None:
    if group_by == "day":
        return event.created_at[:10]
    value: str | None = getattr(event, group_by)
    return value


def rollup(events: Iterable[UsageEvent], group_by: GroupBy) -> UsageAggregate:
    """The events grouped by ``group_by`` (groups in key order, ``null`` last) and totalled."""
    groups: dict[str | None, _Sum] = {}
    total = _Sum()
    for event in events:
        groups.setdefault(group_key(event, group_by), _Sum()).add(event)
        total.add(event)
    ordered = sorted(groups.items(), key=lambda kv: (kv[0] is None, kv[0] or ""))
    return UsageAggregate(
        group_by=group_by,
        groups=[UsageGroup(key=key, **s.totals().model_dump()) for key, s in ordered],
        totals=total.totals(),
    )


def aggregate(project_id: str, f: UsageFilter, group_by: GroupBy) -> UsageAggregate:
    """The project's events the filter matches, rolled up (reads every matching row)."""
    return rollup(usage.iter_events(project_id, f), group_by)
