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
        if result.error is not None and result.error.code == BUDGET_EXCEEDED:
            self.not_started += 1
        for entry in result.usage:
            total = self.by_source.setdefault(entry.source, _SourceTotal())
            total.calls += 1
            total.input_tokens += entry.input_tokens
            total.output_tokens += entry.output_tokens
            total.cost_usd += entry.cost_usd

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
