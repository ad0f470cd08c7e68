"""Eval runs: start (sync or queued), list, get, results, cancel.

A run has no tenancy of its own: it is reached through its eval, so every route first
resolves the eval the caller can see, then the run *of that eval* (a run of another
eval reads as missing).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from chalice import Blueprint
from pydantic import Field, StrictBool, StrictInt, model_validator

from chalicelib.api.access import authorize_references, body_values, on, path_context
from chalicelib.api.evals import Concurrency, CostLimit, authorize_bindings
from chalicelib.api.routing import Call, ListQuery, endpoint, page, route
from chalicelib.domain.base import Page, RequestBody
from chalicelib.domain.catalog import Eval
from chalicelib.domain.runs import EvalResult, EvalRun, RunState
from chalicelib.engine import lifecycle
from chalicelib.engine.start import BASELINE_REFUSAL, StartOptions, start_run
from chalicelib.errors import ValidationFailed, not_found
from chalicelib.iam.references import Reference, ReferenceField
from chalicelib.ids import DatasetItemId, EvalRunId
from chalicelib.store import datasets, evals, result_refine, results, run_lists, runs

bp = Blueprint(__name__)

TAG = "runs"


#: A score bound: a finite number (``nan`` or ``inf`` is a 400).
FiniteScore = Annotated[float, Field(allow_inf_nan=False)]
#: An explicit version is a read of that version of the eval's agent (denied: as missing).
PinnedVersion = Annotated[
    StrictInt,
    Field(ge=1),
    Reference(
        "agent",
        ("agents:GetAgentVersion",),
        message="agent {id} has no version {value}",
        scope="eval:agent_id",
    ),
]
#: A baseline is a run of the eval: comparing with it reads it (denied: unusable, as missing).
Baseline = Annotated[
    EvalRunId,
    Reference(
        "eval",
        ("evaluations:GetEval",),
        message=BASELINE_REFUSAL,
        scope="path:eval_id",
        value_kind="eval_run",
    ),
]


class StartRun(RequestBody):
    wait: StrictBool = False
    agent_version: PinnedVersion | None = None
    baseline_run_id: Baseline | None = None
    metadata: dict[str, Any] | None = None
    tool_context: dict[str, str] | None = None
    max_concurrency: Concurrency | None = None
    #: Overrides the eval's ``max_cost_usd`` for this run.
    max_cost_usd: CostLimit | None = None
    early_stop: StrictBool = Field(
        False,
        description=(
            "pawl: run the items in a seeded random order and stop once a sequential test "
            "decides regressed / not_worse against the baseline (needs baseline_run_id, one "
            "trial and the eval's max_regression)"
        ),
    )
    early_stop_seed: StrictInt | None = Field(
        None, ge=0, le=2**53, description="pawl: the order's seed (default: from the run id)"
    )


class RunsQuery(ListQuery):
    """The runs list's window, and ``view`` (a pawl addition): ``summary`` answers each run
    whole but for ``aggregate_scores``, which holds only its headline figures (pass rate,
    its interval, the baseline delta and p), about a tenth of a full run."""

    view: Literal["full", "summary"] = Field(
        "full", description="summary: aggregate_scores holds only the headline figures"
    )


def start_references() -> list[ReferenceField]:
    return route("POST", "/api/v1/evals/{eval_id}/runs").references()


def authorize_start(call: Call[StartRun, Any], evaluation: Eval) -> None:
    """What the run will use, authorized as the caller at this start (not only when the eval
    was written): the eval's agent, dataset and scorer resources, and the version or the
    baseline the body names. Reads only, before the run exists."""
    authorize_bindings(call.caller, evaluation)
    context = {**path_context(call.path), "eval:agent_id": evaluation.agent_id}
    authorize_references(start_references, call.caller, body_values(call.body), context)


def _visible_eval(call: Call[Any, Any]) -> Eval:
    return _visible_counted_eval(call)[0]


def _visible_counted_eval(call: Call[Any, Any]) -> tuple[Eval, int | None]:
    """The path's eval the caller may see, and its run count (None: not counted)."""
    evaluation, run_count = evals.get_eval_and_run_count(call.path["eval_id"])
    call.caller.check_visible(evaluation.project_id, "eval", evaluation.id)
    return evaluation, run_count


def _run_of(call: Call[Any, Any]) -> RunState:
    evaluation = _visible_eval(call)
    run_id = call.path["eval_run_id"]
    state = runs.find_run(run_id)
    if state is None or state.run.eval_id != evaluation.id:
        raise not_found("eval_run", run_id)
    return state


@endpoint(
    bp,
    "/api/v1/evals/{eval_id}/runs",
    "POST",
    access=on("evaluations:RunEval", "eval_id"),
    body=StartRun,
    response=EvalRun,
    status=201,
    tag=TAG,
    operation_id="startEvalRun",
)
def create_run(call: Call[StartRun, Any]) -> EvalRun:
    """Start a run: ``wait: true`` returns it finished (25 items at most), else queued."""
    evaluation = _visible_eval(call)
    authorize_start(call, evaluation)
    body = call.body
    options = StartOptions(
        wait=body.wait,
        agent_version=body.agent_version,
        baseline_run_id=body.baseline_run_id,
        metadata=body.metadata or {},
        tool_context=body.tool_context or {},
        max_concurrency=body.max_concurrency,
        max_cost_usd=body.max_cost_usd,
        early_stop=body.early_stop,
        early_stop_seed=body.early_stop_seed,
    )
    return start_run(evaluation, options)


@endpoint(
    bp,
    "/api/v1/evals/{eval_id}/runs",
    "GET",
    access=on("evaluations:ListEvals", "eval_id"),
    query=RunsQuery,
    response=Page[EvalRun],
    tag=TAG,
    operation_id="listEvalRuns",
)
def list_runs(call: Call[Any, RunsQuery]) -> dict[str, Any]:
    """List an eval's runs, newest first (``view=summary``: each run's headline figures
    for its ``aggregate_scores``)."""
    evaluation, run_count = _visible_counted_eval(call)
    listed = run_lists.list_run_summaries if call.query.view == "summary" else run_lists.list_runs
    return page(listed(evaluation.id, call.query.window(), run_count))


@endpoint(
    bp,
    "/api/v1/evals/{eval_id}/runs/{eval_run_id}",
    "GET",
    access=on("evaluations:GetEval", "eval_id"),
    response=EvalRun,
    tag=TAG,
    operation_id="getEvalRun",
)
def get_run(call: Call[Any, Any]) -> EvalRun:
    """Get a run: status, counts, aggregate scores and verdict."""
    return _run_of(call).run


def _with_live_item_ids(page_results: list[EvalResult]) -> list[EvalResult]:
    """``dataset_item_id`` reads null once the item is deleted (one BatchGetItem per page)."""
    ids = [r.dataset_item_id for r in page_results if r.dataset_item_id]
    existing = datasets.batch_get_items(ids) if ids else {}
    for result in page_results:
        if result.dataset_item_id not in existing:
            result.dataset_item_id = None
    return page_results


class ResultsQuery(ListQuery):
    """pawl adds to SOAT's list: ``outcome`` (passed, failed, errored or flaky),
    ``dataset_item_id`` (one item's trials), ``group``, ``scorer`` with ``min_score`` /
    ``max_score``, ``text`` and ``sort`` (by the scorer's score)."""

    outcome: Literal["passed", "failed", "errored", "flaky"] | None = Field(
        None,
        description="only results of this outcome; flaky: every trial of an item whose "
        "scored trials disagree (a pawl addition)",
    )
    dataset_item_id: DatasetItemId | None = Field(
        None, description="only this dataset item's results, every trial (a pawl addition)"
    )
    group: str | None = Field(
        None,
        min_length=1,
        max_length=500,
        description="only items whose metadata names this group under the eval's group_by "
        "(a pawl addition)",
    )
    scorer: str | None = Field(
        None,
        min_length=1,
        max_length=200,
        description="only results this scorer scored (a pawl addition)",
    )
    min_score: FiniteScore | None = Field(
        None, description="with scorer: only its scores at least this (a pawl addition)"
    )
    max_score: FiniteScore | None = Field(
        None, description="with scorer: only its scores at most this (a pawl addition)"
    )
    text: str | None = Field(
        None,
        min_length=1,
        max_length=200,
        description="only outputs containing this text, any case (a pawl addition)",
    )
    sort: Literal["score_asc", "score_desc"] | None = Field(
        None,
        description="with scorer: by its score, ties in item order (a pawl addition)",
    )

    @model_validator(mode="after")
    def _scorer_given(self) -> ResultsQuery:
        for name in ("min_score", "max_score", "sort"):
            if getattr(self, name) is not None and self.scorer is None:
                raise ValidationFailed(f"{name} needs scorer: name the scorer", field=name)
        low, high = self.min_score, self.max_score
        if low is not None and high is not None and low > high:
            raise ValidationFailed(
                f"min_score {low} is above max_score {high}: the range is empty",
                field="min_score",
            )
        return self

    def refinement(self, group_by: str | None) -> result_refine.Refinement | None:
        """What the store's refined listing keeps; None: the plain (or key-filtered) list."""
        refined = (self.group, self.scorer, self.text, self.sort)
        if self.outcome != "flaky" and all(value is None for value in refined):
            return None
        if self.group is not None and group_by is None:
            raise ValidationFailed("group needs an eval with group_by", field="group")
        return result_refine.Refinement(
            outcome=self.outcome,
            group_by=group_by,
            group=self.group,
            scorer=self.scorer,
            min_score=self.min_score,
            max_score=self.max_score,
            text=self.text,
            descending=None if self.sort is None else self.sort == "score_desc",
            item_id=self.dataset_item_id,
        )


@endpoint(
    bp,
    "/api/v1/evals/{eval_id}/runs/{eval_run_id}/results",
    "GET",
    access=on("evaluations:ListEvals", "eval_id"),
    query=ResultsQuery,
    response=Page[EvalResult],
    tag=TAG,
    operation_id="listEvalResults",
)
def list_results(call: Call[Any, ResultsQuery]) -> dict[str, Any]:
    """List a run's results in item order (trials of an item together)."""
    state = _run_of(call)
    query = call.query
    refine = query.refinement(state.snapshot.group_by)
    if refine is not None:
        found = result_refine.list_refined(state, query.window(), refine)
    else:
        found = results.list_results(state, query.window(), query.outcome, query.dataset_item_id)
    return page(found.with_items(_with_live_item_ids(found.items)))


@endpoint(
    bp,
    "/api/v1/evals/{eval_id}/runs/{eval_run_id}/cancel",
    "POST",
    access=on("evaluations:RunEval", "eval_id"),
    response=EvalRun,
    tag=TAG,
    operation_id="cancelEvalRun",
)
def cancel_run(call: Call[Any, Any]) -> EvalRun:
    """Cancel a queued or running run: results kept, aggregates null, no event."""
    return lifecycle.cancel(_run_of(call).id)
