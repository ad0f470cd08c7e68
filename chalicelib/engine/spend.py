"""What a run spent, split by source, summed while settle streams its results.

Sources: ``eval`` (the agent under test), ``eval_judge`` (llm_judge completions),
``embedding`` (embedding_similarity) and ``decider`` (decisions), so a team sees what
grading costs beside the agent.

A partial aggregate (``stats.partial``): the tallies of a run's item ranges merge into
the run's, cost sums exactly, so a sliced settle reports the very figures one pass does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from chalicelib.domain.runs import BUDGET_EXCEEDED, EvalResult
from chalicelib.stats import CompensatedSum

_COUNTS = ("calls", "input_tokens", "output_tokens")


@dataclass
class _SourceTotal:
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost: CompensatedSum = field(default_factory=CompensatedSum)

    def merge(self, other: _SourceTotal) -> None:
        self.calls += other.calls
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.cost.merge(other.cost)

    def state(self) -> dict[str, Any]:
        return {**{name: getattr(self, name) for name in _COUNTS}, "cost": self.cost.state()}

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> _SourceTotal:
        return cls(
            calls=int(state["calls"]),
            input_tokens=int(state["input_tokens"]),
            output_tokens=int(state["output_tokens"]),
            cost=CompensatedSum.from_state(state["cost"]),
        )


@dataclass
class SpendTally:
    by_source: dict[str, _SourceTotal] = field(default_factory=dict)
    #: Results the spend guard did not start (``max_cost_usd`` was spent first).
    not_started: int = 0

    def add(self, result: EvalResult) -> None:
        self.add_usage(
            [entry.model_dump() for entry in result.usage],
            result.error.code if result.error is not None else None,
        )

    def add_usage(self, usage: list[dict[str, Any]], error_code: str | None = None) -> None:
        """A result row's usage and error code as stored (settle's lean rows read them so)."""
        if error_code == BUDGET_EXCEEDED:
            self.not_started += 1
        for entry in usage:
            total = self.by_source.get(entry["source"])
            if total is None:
                total = self.by_source[entry["source"]] = _SourceTotal()
            total.calls += 1
            total.input_tokens += entry.get("input_tokens", 0)
            total.output_tokens += entry.get("output_tokens", 0)
            total.cost.add(entry.get("cost_usd", 0.0))

    def merge(self, other: SpendTally) -> None:
        self.not_started += other.not_started
        for source, theirs in other.by_source.items():
            mine = self.by_source.get(source)
            if mine is None:
                self.by_source[source] = _SourceTotal.from_state(theirs.state())
            else:
                mine.merge(theirs)

    def state(self) -> dict[str, Any]:
        return {
            "not_started": self.not_started,
            "by_source": {name: self.by_source[name].state() for name in sorted(self.by_source)},
        }

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> SpendTally:
        return cls(
            by_source={k: _SourceTotal.from_state(v) for k, v in state["by_source"].items()},
            not_started=int(state["not_started"]),
        )

    def result(self) -> dict[str, Any]:
        """``{"by_source": {source: {calls, input_tokens, output_tokens, cost_usd}}, "total"}``."""
        by_source = {
            source: {
                "calls": t.calls,
                "input_tokens": t.input_tokens,
                "output_tokens": t.output_tokens,
                "cost_usd": round(t.cost.value, 6),
            }
            for source, t in sorted(self.by_source.items())
        }
        total = {key: sum(entry[key] for entry in by_source.values()) for key in _COUNTS}
        every_cost = CompensatedSum()
        for t in self.by_source.values():
            every_cost.merge(t.cost)
        total["cost_usd"] = round(every_cost.value, 6)
        return {"by_source": by_source, "total": total}
