"""What a run spent, split by source, summed while settle streams its results.

Sources: ``eval`` (the agent under test), ``eval_judge`` (llm_judge completions),
``embedding`` (embedding_similarity) and ``decider`` (decisions), so a team sees what
grading costs beside the agent.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from chalicelib.domain.runs import BUDGET_EXCEEDED, EvalResult


@dataclass
class _SourceTotal:
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0


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
            total = self.by_source.setdefault(entry["source"], _SourceTotal())
            total.calls += 1
            total.input_tokens += entry.get("input_tokens", 0)
            total.output_tokens += entry.get("output_tokens", 0)
            total.cost_usd += entry.get("cost_usd", 0.0)

    def result(self) -> dict[str, Any]:
        """``{"by_source": {source: {calls, input_tokens, output_tokens, cost_usd}}, "total"}``."""
        by_source = {
            source: {
                "calls": t.calls,
                "input_tokens": t.input_tokens,
                "output_tokens": t.output_tokens,
                "cost_usd": round(t.cost_usd, 6),
            }
            for source, t in sorted(self.by_source.items())
        }
        total = {
            key: sum(entry[key] for entry in by_source.values())
            for key in ("calls", "input_tokens", "output_tokens")
        }
        total["cost_usd"] = round(sum(t.cost_usd for t in self.by_source.values()), 6)
        return {"by_source": by_source, "total": total}
