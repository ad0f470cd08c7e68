"""Eval runs, their results and the generations behind them, as the engine sees them.

``EvalRun`` and ``EvalResult`` are the public shapes the API serializes. ``RunState`` is
the engine's view of a run row: the public run plus what no reader may see (the
``tool_context`` secret) and the bookkeeping that drives the lifecycle (fan-out
progress, the settle claim, the activity clock).
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    field_serializer,
    field_validator,
    model_serializer,
)

from chalicelib.domain.base import Resource
from chalicelib.domain.catalog import EvalSettings
from chalicelib.domain.run_status import ACTIVE_STATUSES as ACTIVE_STATUSES
from chalicelib.domain.run_status import BASELINE_STATUSES as BASELINE_STATUSES
from chalicelib.domain.run_status import CANCELLED as CANCELLED
from chalicelib.domain.run_status import COMPLETED as COMPLETED
from chalicelib.domain.run_status import FAILED as FAILED
from chalicelib.domain.run_status import QUEUED as QUEUED
from chalicelib.domain.run_status import RUNNING as RUNNING
from chalicelib.domain.run_status import TERMINAL_STATUSES as TERMINAL_STATUSES
from chalicelib.domain.run_status import WIRE_CANCELED as WIRE_CANCELED
from chalicelib.domain.run_status import status_from_wire as status_from_wire
from chalicelib.domain.run_status import status_on_wire as status_on_wire

#: The failure code of a run whose ``max_cost_usd`` was spent before every item started,
#: and the error code of each item it then did not start.
BUDGET_EXCEEDED = "BUDGET_EXCEEDED"
#: The failure code of a run the reaper failed: no progress for the grace period.
RUN_STALLED = "RUN_STALLED"

EVENT_COMPLETED = "eval_run.completed"
EVENT_FAILED = "eval_run.failed"

GENERATION_COMPLETED = "completed"
GENERATION_FAILED = "failed"
GENERATION_REQUIRES_ACTION = "requires_action"


class EvalSnapshot(EvalSettings):
    """The eval as it was when the run started: a later edit cannot change a running run."""

    model_config = ConfigDict(extra="ignore")

    project_id: str


class EvalRun(Resource):
    id: str
    eval_id: str
    agent_version: int
    decider_versions: dict[str, int] | None = None
    status: str
    baseline_run_id: str | None = None
    trigger_id: str | None = None
    aggregate_scores: dict[str, Any] | None = None
    passed: bool | None = None
    verdict_reasons: list[dict[str, Any]] | None = None
    failure_reason: str | None = None
    #: Why a failed run failed, as a code: ``BUDGET_EXCEEDED`` (its ``max_cost_usd`` was
    #: spent before every item started) or ``RUN_STALLED`` (the reaper's). pawl's own.
    failure_code: str | None = None
    item_count: int = 0
    completed_count: int = 0
    errored_count: int = 0
    #: Result rows (trials) recorded passed / failed so far, counted with the rows (pawl's
    #: own, beside SOAT's counts); null for a run recorded before these counters existed.
    passed_count: int | None = None
    failed_count: int | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    #: pawl's addition: a run started with ``early_stop`` (its seed, margin and method, the
    #: sequential test's decision once made, its paired counts and the items skipped);
    #: null for a run without it. See docs/statistics.md, "Runs that stop early".
    early_stop: dict[str, Any] | None = None
    started_at: str | None = None
    finished_at: str | None = None
    created_at: str

    @field_validator("status", mode="before")
    @classmethod
    def _status_from_wire(cls, status: Any) -> Any:
        return status_from_wire(status)

    @field_serializer("status", when_used="json")
    def _status_on_wire(self, status: str) -> str:
        return status_on_wire(status)


#: The figures of a run's ``aggregate_scores`` a list of runs shows (its headline).
HEADLINE_FIGURES = ("pass_rate", "pass_rate_interval")
#: ... and of its ``baseline`` comparison.
HEADLINE_BASELINE_FIGURES = ("pass_rate_delta", "p_value")


def headline_of(aggregate: dict[str, Any] | None) -> dict[str, Any]:
    """The part of ``aggregate`` a runs table and chart read: the pass rate, its interval
    and, with a baseline, the delta and its p (``{}`` for a run without aggregates)."""
    if not isinstance(aggregate, dict):
        return {}
    headline = {name: aggregate[name] for name in HEADLINE_FIGURES if name in aggregate}
    baseline = aggregate.get("baseline")
    if isinstance(baseline, dict):
        headline["baseline"] = {
            name: baseline[name] for name in HEADLINE_BASELINE_FIGURES if name in baseline
        }
    return headline


class EarlyStopState(BaseModel):
    """What the engine keeps of an ``early_stop`` run beside its public fields."""

    seed: int
    margin: float
    alpha: float
    method: str
    decision: str | None = None
    #: What the test saw when it decided (recorded items, paired counts, e-values).
    decided: dict[str, Any] | None = None
    #: ``both_passed`` / ``improved`` / ``regressed`` / ``neither_passed`` recorded so far.
    pairs: dict[str, int] = Field(default_factory=dict)
    skipped: int = 0

    @property
    def stopped(self) -> bool:
        return self.decision is not None


class RunState(BaseModel):
    """A run row as the engine reads it (never serialized to a caller as a whole)."""

    run: EvalRun
    snapshot: EvalSnapshot
    tool_context: dict[str, str] = Field(default_factory=dict)
    #: The trigger ids whose firings led to this run, oldest first (empty: an API start).
    causation: list[str] = Field(default_factory=list)
    fanout_done: bool = False
    settle_claimed: bool = False
    #: What the recorded results spent so far (USD); the spend guard compares it with
    #: the snapshot's ``max_cost_usd``.
    spent_usd: float = 0.0
    last_activity_at: str
    created_key: str
    #: Result rows per outcome (``passed``, ``failed``, ``errored``), kept by the recording
    #: transaction; None for a run recorded before these counters existed.
    outcome_counts: dict[str, int] | None = None
    #: An ``early_stop`` run: its test's settings (seed, margin, alpha, method), the
    #: decision once made (``None`` before), the paired counts recorded so far and the work
    #: items skipped after the decision. ``None`` for every other run.
    early_stop: EarlyStopState | None = None
    #: How many hash keys the run's rows are spread over (``store.shards``; 1: unsharded).
    shards: int = 1

    @property
    def id(self) -> str:
        return self.run.id

    @property
    def status(self) -> str:
        return self.run.status

    @property
    def project_id(self) -> str:
        return self.snapshot.project_id

    @property
    def recorded_count(self) -> int:
        return self.run.completed_count + self.run.errored_count

    @property
    def all_recorded(self) -> bool:
        """Every work item has a result (or, an early-stopped run's, a skip marker)."""
        skipped = self.early_stop.skipped if self.early_stop is not None else 0
        return self.fanout_done and self.recorded_count + skipped >= self.run.item_count


class UsageEntry(Resource):
    """Spend one item caused, by source: ``eval`` (the agent), ``eval_judge``, ``embedding``,
    ``decider``."""

    source: str
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    model: str | None = None


class RecordedError(Resource):
    """An item-level failure: set instead of scores, never alongside them."""

    code: str
    message: str


class ScoreEntry(Resource):
    scorer: str
    score: float
    passed: bool
    reasoning: str | None = None
    decision_id: str | None = None

    @model_serializer(mode="wrap")
    def _drop_absent_optionals(self, handler: Any) -> dict[str, Any]:
        # reasoning / decision_id are present only for the scorers that produce them.
        data: dict[str, Any] = handler(self)
        for optional in ("reasoning", "decision_id"):
            if data.get(optional) is None:
                data.pop(optional, None)
        return data


class EvalResult(Resource):
    # No docstring: it would become the OpenAPI schema's description. The run's id is
    # ``run_id`` in the code, as everywhere else; the wire names it ``eval_run_id``.
    model_config = ConfigDict(extra="forbid", serialize_by_alias=True)

    id: str
    run_id: str = Field(
        validation_alias=AliasChoices("eval_run_id", "run_id"), serialization_alias="eval_run_id"
    )
    dataset_item_id: str | None
    trial: int = 1
    input: list[dict[str, Any]]
    expected_output: str | None = None
    output: str | None = None
    generation_id: str | None = None
    scores: list[ScoreEntry] = Field(default_factory=list)
    passed: bool | None = None
    error: RecordedError | None = None
    usage: list[UsageEntry] = Field(default_factory=list)
    #: pawl's addition: how many attempts the item's agent call took (1: the first one
    #: answered); null when no agent call was made or the result predates the count.
    attempts: int | None = None
    created_at: str

    @property
    def errored(self) -> bool:
        return self.error is not None


class Generation(Resource):
    """One call of an agent: in an eval (``source: "eval"``) or on its own (``source: null``)."""

    id: str
    project_id: str
    agent_id: str
    agent_version: int
    run_id: str | None = None
    dataset_item_id: str | None = None
    input: list[dict[str, Any]] | None = None
    output: str | None = None
    object: Any = None
    status: str
    error: RecordedError | None = None
    usage: dict[str, Any] | None = None
    latency_ms: int = 0
    source: str | None = None
    content_purged: bool = False
    created_at: str


#: A frozen item rides in its work message only up to this size (its JSON); a larger one
#: is read by id from the run's frozen set (SQS bills per 64 KB and caps a batch's total).
INLINE_ITEM_BYTES = 16 * 1024


class FrozenItem(BaseModel):
    """A dataset item as a run froze it: what each of its results keeps a copy of."""

    dataset_item_id: str
    input: list[dict[str, Any]]
    expected_output: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    def carried(self) -> str | None:
        """The item as JSON when it is small enough to ride in a message, else None."""
        encoded = json.dumps(self.model_dump(mode="json"))
        return encoded if len(encoded) <= INLINE_ITEM_BYTES else None


class WorkItem(BaseModel):
    """One (run, item, trial) to execute; ``item`` is absent when it was too large to carry."""

    run_id: str
    dataset_item_id: str
    trial: int = 1
    item: FrozenItem | None = None
    #: An ``early_stop`` run's work carries the baseline's outcome of the item (passed or
    #: not; absent: not comparable), so recording it adds to the paired counts at once.
    baseline_passed: bool | None = None
    #: The run's shard count as the fan-out knew it (absent in older messages: 1); the
    #: worker's first read uses it, and checks it against the run row.
    shards: int = 1

    @property
    def result_key(self) -> str:
        return result_key(self.dataset_item_id, self.trial)


class ResultRecord(BaseModel):
    """What executing one work item produced: the result row and its generation."""

    eval_id: str
    result: EvalResult
    #: None only for an item that failed for reasons of pawl's own (no agent call recorded).
    generation: Generation | None = None
    #: The baseline's outcome of the item, for an ``early_stop`` run's paired counts.
    baseline_passed: bool | None = None

    @property
    def paired(self) -> tuple[bool, bool] | None:
        """(baseline passed, passed now) when the record counts in the paired table."""
        passed = self.result.passed
        if self.baseline_passed is None or self.result.errored or passed is None:
            return None
        return self.baseline_passed, passed


def result_key(dataset_item_id: str, trial: int) -> str:
    """The results table range key: item order, then trial order (sortable, zero-padded)."""
    return f"{dataset_item_id}#{trial:02d}"
