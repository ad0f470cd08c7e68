"""Usage events: what one metered call cost, and the rollups the usage API answers with.

An event is one metered call (an agent generation, a judge completion, an embedding, a
decision) with the workload behind it (``source``), the model when known, its tokens
and cost, and what it was for (eval, run, item, generation). Names follow SOAT's
``UsageEvent`` where it has them; ``docs/usage.md`` lists the differences.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from chalicelib.domain.base import Resource

#: Workloads pawl meters (``None``: an ordinary agent generation outside any eval).
SOURCE_EVAL = "eval"
SOURCE_EVAL_JUDGE = "eval_judge"
SOURCE_EMBEDDING = "embedding"
SOURCE_DECIDER = "decider"
METER_LLM_TOKENS = "llm_tokens"

GroupBy = Literal["source", "eval_id", "model", "day"]


class UsageComponent(Resource):
    """One measured dimension of an event (tokens in, tokens out).

    pawl has no price book: the cost is what the provider or agent reported for the
    whole call, on the event, so ``unit_price`` and ``cost_usd`` are null here.
    """

    component: str
    quantity: int
    unit: str = "token"
    billable: bool = True
    unit_price: float | None = None
    cost_usd: float | None = None
    price_id: str | None = None


class UsageEvent(Resource):
    id: str
    project_id: str
    source: str | None = None
    meter_type: str = METER_LLM_TOKENS
    provider: str | None = None
    model: str | None = None
    ai_provider_id: str | None = None
    agent_id: str | None = None
    generation_id: str | None = None
    eval_id: str | None = None
    eval_run_id: str | None = None
    dataset_item_id: str | None = None
    trial: int | None = None
    decision_id: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    components: list[UsageComponent] = Field(default_factory=list)
    created_at: str


class UsageTotals(Resource):
    """Summed figures of a set of events (cost rounded to a millionth of a dollar)."""

    event_count: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0


class UsageGroup(UsageTotals):
    #: The group's value of the ``group_by`` dimension; null collects events it does not
    #: apply to (ordinary traffic has no source, a standalone generation no eval).
    key: str | None = None


class UsageAggregate(Resource):
    group_by: GroupBy
    groups: list[UsageGroup]
    totals: UsageTotals
