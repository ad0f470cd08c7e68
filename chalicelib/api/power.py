"""The planner (a pawl addition to ``/api/v1``): ``GET /api/v1/evals/{eval_id}/power``.

How many compared items the eval needs to detect a pass-rate drop of ``margin`` (two-sided
McNemar at ``alpha`` with ``power``, Connor 1987), and the smallest drop its dataset's
current size detects, from the eval's newest completed runs (``engine.power_plan``).
Authorized exactly as reading the eval: ``evaluations:GetEval`` on it, and an eval of
another project is the same 404 as a missing one.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from chalice import Blueprint
from pydantic import BaseModel, ConfigDict, Field

from chalicelib.api.access import on
from chalicelib.api.evals import visible_eval
from chalicelib.api.routing import Call, endpoint
from chalicelib.engine import power_plan

bp = Blueprint(__name__)

PATH = "/api/v1/evals/{eval_id}/power"


class PowerQuery(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    margin: float | None = Field(
        None,
        gt=0,
        lt=1,
        description="the pass-rate drop to detect (default: the eval's max_regression, else 0.05)",
    )
    alpha: float | None = Field(
        None, gt=0, lt=0.5, description="two-sided significance level (default 0.05)"
    )
    power: float | None = Field(
        None, ge=0.5, lt=1, description="the chance of detecting the drop (default 0.8)"
    )


class PowerInputsOut(BaseModel):
    """What the plan was computed from."""

    source: str = Field(description="comparison | run | assumption")
    noise_discordance: float = Field(
        description="the share of compared items an unchanged agent flips (psi0)"
    )
    noise_from: str = Field(
        description="discordance | noise_floor | independent_outcomes | assumption"
    )
    alternative_discordance: float
    trials: int
    runs_considered: int = Field(description="completed runs among the newest read")
    run_id: str | None = None
    baseline_run_id: str | None = None
    pass_rate: float | None = None
    discordance: float | None = None
    flip_rate: float | None = None
    compared_item_count: int | None = None


class PowerPlan(BaseModel):
    eval_id: str
    margin: float
    margin_from: str = Field(description="query | eval.max_regression | default")
    alpha: float
    power: float
    sides: str
    method: str
    items_needed: int | None = Field(
        description="compared items that detect a drop of margin (null beyond a billion)"
    )
    dataset_item_count: int
    min_detectable_regression: float | None = Field(
        description="the smallest drop the dataset's items detect at alpha with power"
    )
    inputs: PowerInputsOut
    explanation: str


@endpoint(
    bp,
    PATH,
    "GET",
    access=on("evaluations:GetEval", "eval_id"),
    query=PowerQuery,
    response=PowerPlan,
    tag="evals",
    operation_id="getEvalPower",
)
def get_eval_power(call: Call[Any, PowerQuery]) -> PowerPlan:
    """Plan an eval's size: the items that detect a regression, and what it detects now."""
    evaluation = visible_eval(call.caller, call.path["eval_id"])
    query = call.query
    found = power_plan.plan(evaluation, query.margin, query.alpha, query.power)
    inputs = found.inputs
    return PowerPlan(
        eval_id=evaluation.id,
        margin=found.margin,
        margin_from=found.margin_from,
        alpha=found.alpha,
        power=found.power,
        sides=power_plan.stats_power.SIDES,
        method=found.method,
        items_needed=found.items_needed,
        dataset_item_count=found.dataset_item_count,
        min_detectable_regression=found.min_detectable_regression,
        inputs=PowerInputsOut(
            **asdict(inputs),
            alternative_discordance=power_plan.stats_power.alternative_discordance(
                inputs.noise_discordance, found.margin
            ),
        ),
        explanation=found.explanation,
    )
