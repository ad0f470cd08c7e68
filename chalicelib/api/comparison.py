"""Two runs of one eval compared item by item (a pawl addition to ``/api/v1``).

``GET /api/v1/evals/{eval_id}/runs/{eval_run_id}/comparison`` compares the run with its
own baseline, or with the run ``?baseline_run_id=`` names: the figures of
``chalicelib.stats`` (pass-rate delta over the items both scored, flips, the exact McNemar
p, per group the raw and Holm-adjusted p) and a server-paged list of the items that moved,
regressions first (``engine.comparison``).

Both runs are reached through the path's eval, as every run route reaches its run: the
route's ``evaluations:GetEval`` on the eval covers both, and a baseline that is not a run
of this eval (missing, of another eval, of another project) is the same 404.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from chalice import Blueprint
from pydantic import BaseModel, ConfigDict, Field

from chalicelib.api.access import on
from chalicelib.api.evals import visible_eval
from chalicelib.api.routing import Call, endpoint
from chalicelib.domain.runs import EvalResult, RunState
from chalicelib.engine.comparison import (
    CHANGED,
    COMPARED_KINDS,
    Comparison,
    Entry,
    Selection,
    compare,
)
from chalicelib.errors import ValidationFailed, not_found
from chalicelib.ids import EvalRunId
from chalicelib.stats import ItemOutcome
from chalicelib.store import runs
from chalicelib.store.pagination import is_count, malformed_cursor, pack_cursor, unpack_cursor

bp = Blueprint(__name__)

PATH = "/api/v1/evals/{eval_id}/runs/{eval_run_id}/comparison"


class ComparisonQuery(BaseModel):
    model_config = ConfigDict(extra="forbid")
    baseline_run_id: EvalRunId | None = Field(
        None, description="the run to compare with (default: the run's own baseline_run_id)"
    )
    changed: Literal["true", "false", "all"] = Field(
        "true",
        description="true: regressions then improvements; false: the unchanged; all: both",
    )
    group: str | None = Field(
        None, max_length=512, description="only items of this group (the eval's group_by)"
    )
    scorer: str | None = Field(
        None, max_length=200, description="compare this scorer's verdict instead of the item's"
    )
    limit: int = Field(20, ge=1, le=100)
    cursor: str | None = Field(None, description="next_cursor of the previous page")


class ScorerVerdict(BaseModel):
    score: float
    passed: bool


class TrialOutput(BaseModel):
    """One trial of an item in one run, as recorded (its output whole)."""

    trial: int
    #: None: no scorer decided a pass.
    outcome: Literal["passed", "failed", "errored"] | None = None
    scores: dict[str, ScorerVerdict]
    output: str | None = None
    error: dict[str, Any] | None = None


class SideOutcome(BaseModel):
    """One run's side of an item: its outcome as the run's ``trial_reducer`` reduced its
    trials (what the comparison compares), its first trial's output, and every trial."""

    outcome: Literal["passed", "failed", "errored"]
    scores: dict[str, ScorerVerdict]
    trial_count: int
    trial_reducer: str
    flaky: bool
    output: str | None = None
    error: dict[str, Any] | None = None
    #: Every trial of a listed item in trial order (an item of one run only: the first).
    trials: list[TrialOutput] = Field(default_factory=list)


class ComparedItem(BaseModel):
    dataset_item_id: str
    kind: Literal["regressed", "improved", "unchanged", "added", "removed"]
    group: str | None = None
    input: list[dict[str, Any]] = Field(default_factory=list)
    expected_output: str | None = None
    current: SideOutcome | None = None
    baseline: SideOutcome | None = None


class ItemPage(BaseModel):
    data: list[ComparedItem]
    total: int
    limit: int
    offset: int
    next_cursor: str | None = None


class OneSided(BaseModel):
    """Items scorable in one run only: the first ones, and how many there are."""

    data: list[ComparedItem]
    total: int


class RunComparison(BaseModel):
    eval_id: str
    eval_run_id: str
    baseline_run_id: str
    group_by: str | None = None
    changed: str
    group: str | None = None
    scorer: str | None = None
    #: ``aggregate_scores.baseline``'s shape, worked out now over both runs' items.
    comparison: dict[str, Any]
    counts: dict[str, int]
    items: ItemPage
    added: OneSided
    removed: OneSided
    groups: list[str]
    scorers: list[str]


def _run_of_eval(eval_id: str, run_id: str) -> RunState:
    state = runs.find_run(run_id)
    if state is None or state.run.eval_id != eval_id:
        raise not_found("eval_run", run_id)
    return state


def _scope(run_id: str, baseline_id: str, query: ComparisonQuery) -> str:
    filters = [run_id, baseline_id, query.changed, query.group, query.scorer]
    return "comparison:" + json.dumps(filters)


def _position(cursor: str | None, scope: str) -> tuple[tuple[int, str] | None, int]:
    """``((rank, item id), offset)`` of the cursor's last item; anything else is a 400."""
    if not cursor:
        return None, 0
    value = unpack_cursor(cursor, scope)
    if not isinstance(value, dict) or set(value) != {"r", "i", "o"}:
        raise malformed_cursor()
    rank, item_id, offset = value["r"], value["i"], value["o"]
    if not (is_count(rank) and rank < len(COMPARED_KINDS) and isinstance(item_id, str)):
        raise malformed_cursor()
    if not is_count(offset):
        raise malformed_cursor()
    return (rank, item_id), offset


def _trial(result: EvalResult) -> TrialOutput:
    outcome = None
    if result.error is not None:
        outcome = "errored"
    elif result.passed is not None:
        outcome = "passed" if result.passed else "failed"
    return TrialOutput(
        trial=result.trial,
        outcome=outcome,  # type: ignore[arg-type]
        scores={s.scorer: ScorerVerdict(score=s.score, passed=s.passed) for s in result.scores},
        output=result.output,
        error=result.error.model_dump(mode="json") if result.error else None,
    )


def _side(
    outcome: ItemOutcome | None, trials: list[EvalResult], reducer: str
) -> SideOutcome | None:
    if outcome is None:
        return None
    trial = trials[0] if trials else None
    return SideOutcome(
        outcome="errored" if outcome.errored else ("passed" if outcome.passed else "failed"),
        scores={
            key: ScorerVerdict(score=s.score, passed=s.passed) for key, s in outcome.scores.items()
        },
        trial_count=outcome.trial_count,
        trial_reducer=reducer,
        flaky=outcome.flaky,
        output=trial.output if trial is not None else None,
        error=trial.error.model_dump(mode="json") if trial and trial.error else None,
        trials=[_trial(result) for result in trials],
    )


def _item(entry: Entry, reducers: tuple[str, str]) -> ComparedItem:
    current, baseline = entry.trials.get("current", []), entry.trials.get("baseline", [])
    shown = (current or baseline or [None])[0]
    return ComparedItem(
        dataset_item_id=entry.dataset_item_id,
        kind=entry.kind,  # type: ignore[arg-type]
        group=entry.group,
        input=list(shown.input) if shown is not None else [],
        expected_output=shown.expected_output if shown is not None else None,
        current=_side(entry.current, current, reducers[0]),
        baseline=_side(entry.baseline, baseline, reducers[1]),
    )


def _next_cursor(found: Comparison, offset: int, scope: str) -> str | None:
    if not found.more:
        return None
    last = found.page[-1]
    value = {"r": COMPARED_KINDS.index(last.kind), "i": last.dataset_item_id}
    return pack_cursor({**value, "o": offset + len(found.page)}, scope)


@endpoint(
    bp,
    PATH,
    "GET",
    access=on("evaluations:GetEval", "eval_id"),
    query=ComparisonQuery,
    response=RunComparison,
    tag="runs",
    operation_id="compareEvalRuns",
)
def compare_runs(call: Call[Any, ComparisonQuery]) -> RunComparison:
    """Compare a run with its baseline (or another run of the eval) item by item."""
    evaluation = visible_eval(call.caller, call.path["eval_id"])
    current = _run_of_eval(evaluation.id, call.path["eval_run_id"])
    query = call.query
    baseline_id = query.baseline_run_id or current.run.baseline_run_id
    if baseline_id is None:
        raise ValidationFailed(
            f"eval_run {current.id} has no baseline: name the run to compare with in "
            "?baseline_run_id=",
            field="baseline_run_id",
        )
    baseline = _run_of_eval(evaluation.id, baseline_id)
    scope = _scope(current.id, baseline.id, query)
    after, offset = _position(query.cursor, scope)
    selection = Selection(query.changed, query.group, query.scorer, query.limit, after)
    found = compare(current, baseline, selection)
    total = sum(found.counts[kind] for kind in CHANGED[query.changed])
    reducers = current.snapshot.trial_reducer, baseline.snapshot.trial_reducer
    return RunComparison(
        eval_id=evaluation.id,
        eval_run_id=current.id,
        baseline_run_id=baseline.id,
        group_by=current.snapshot.group_by,
        changed=query.changed,
        group=query.group,
        scorer=query.scorer,
        comparison=found.figures,
        counts=found.counts,
        items=ItemPage(
            data=[_item(entry, reducers) for entry in found.page],
            total=total,
            limit=query.limit,
            offset=offset,
            next_cursor=_next_cursor(found, offset, scope),
        ),
        added=OneSided(data=[_item(e, reducers) for e in found.added], total=found.counts["added"]),
        removed=OneSided(
            data=[_item(e, reducers) for e in found.removed], total=found.counts["removed"]
        ),
        groups=found.groups,
        scorers=found.scorers,
    )
