"""Agents, datasets, dataset items and evals as the API shows them."""

from __future__ import annotations

from typing import Any

from chalicelib.domain.base import Resource
from chalicelib.domain.secret_headers import masked_config_field
from chalicelib.settings import MAX_CONCURRENCY_CEILING as MAX_CONCURRENCY_CEILING

#: A run's ``max_concurrency`` when neither its eval nor its start request names one.
DEFAULT_MAX_CONCURRENCY = 40


class Message(Resource):
    role: str
    content: str


class AgentRelease(Resource):
    """A staged rollout: two archived versions served side by side (``docs/releases.md``)."""

    stable_version: int
    canary_version: int
    canary_percent: int
    promotion_gate: str | None = None


class Agent(Resource):
    id: str
    project_id: str
    name: str
    type: str
    config: dict[str, Any] = masked_config_field()
    output_schema: dict[str, Any] | None = None
    version: int
    #: The staged rollout in progress, or None when all traffic serves the live config.
    active_release: AgentRelease | None = None
    created_at: str
    updated_at: str


class AgentVersion(Resource):
    """An immutable snapshot of an agent, written by every create and every update that
    changes it. Only ``eval_run_id`` is ever written later: by the gated promotion that
    made this version live."""

    agent_id: str
    version: int
    name: str
    type: str
    config: dict[str, Any] = masked_config_field()
    output_schema: dict[str, Any] | None = None
    #: The ``version_label`` of the write that archived it (restore, promote and abort set one).
    label: str | None = None
    #: The eval run that cleared the release's ``promotion_gate`` when this version went live.
    eval_run_id: str | None = None
    created_at: str


class Dataset(Resource):
    id: str
    project_id: str
    name: str
    description: str | None = None
    created_at: str
    updated_at: str


class DatasetItem(Resource):
    id: str
    dataset_id: str
    input: list[Message]
    expected_output: str | None = None
    metadata: dict[str, Any]
    source_generation_id: str | None = None
    created_at: str
    updated_at: str


class EvalSettings(Resource):
    """What an eval binds and how its runs are scored and judged (a run snapshots these)."""

    agent_id: str
    dataset_id: str
    scorers: list[dict[str, Any]]
    pass_threshold: float | None = None
    group_by: str | None = None
    trials: int = 1
    trial_reducer: str = "all"
    max_regression: float | None = None
    #: The regression gate's outcome when the comparison is inconclusive (neither regressed
    #: nor shown not worse): "pass" (the default, what such a run always did) or "fail".
    on_inconclusive: str = "pass"
    #: How many of a run's items may execute at once (pawl's own; the spec has none).
    max_concurrency: int = DEFAULT_MAX_CONCURRENCY
    #: A run stops starting items once its spend reaches this (USD); None: no budget.
    max_cost_usd: float | None = None


class EvalSpec(EvalSettings):
    """The writable fields of an eval (what create and update validate and store)."""

    name: str


class Eval(EvalSpec):
    id: str
    project_id: str
    created_at: str
    updated_at: str
