"""Evals: the rules an eval's create and update follow beyond its body.

An eval binds an agent and a dataset of its own project (else a 400 naming ``agent_id`` or
``dataset_id``) and scorers validated against that project's catalog and the agent's
output schema; an update re-validates the scorers when they or the agent change. A write
that loses a race (a concurrent update, the agent changing meanwhile) is retried from a
fresh read.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from chalicelib.domain.catalog import Agent, Eval, EvalSpec
from chalicelib.engine.concurrency import check_max_concurrency
from chalicelib.errors import NotFound, ValidationFailed
from chalicelib.scoring.validation import env_for_project, validate_scorers
from chalicelib.store import agents, datasets, evals


def bound_agent(project_id: str, agent_id: str) -> Agent:
    """The agent an eval binds: it must exist in the eval's project (else 400 ``agent_id``)."""
    try:
        agent = agents.get_agent(agent_id)
    except NotFound:
        agent = None
    if agent is None or agent.project_id != project_id:
        raise ValidationFailed(f"agent {agent_id} not found in this project", field="agent_id")
    return agent


def check_bound_dataset(project_id: str, dataset_id: str) -> None:
    try:
        dataset = datasets.get_dataset(dataset_id)
    except NotFound:
        dataset = None
    if dataset is None or dataset.project_id != project_id:
        raise ValidationFailed(
            f"dataset {dataset_id} not found in this project", field="dataset_id"
        )


def create_eval(project_id: str, fields: Mapping[str, Any], scorers: list[Any]) -> Eval:
    """Create the eval ``fields`` (every EvalSpec field but ``scorers``) describe."""
    check_max_concurrency(fields.get("max_concurrency"))

    def attempt() -> Eval:
        agent = bound_agent(project_id, fields["agent_id"])
        check_bound_dataset(project_id, fields["dataset_id"])
        env = env_for_project(project_id, "create", agent.output_schema)
        spec = EvalSpec(scorers=validate_scorers(scorers, env), **fields)
        return evals.create_eval(project_id, spec, agent.version)

    created: Eval = evals.run_with_retry(attempt)
    return created


def _updated_spec(current: Eval, changes: Mapping[str, Any]) -> EvalSpec:
    """``current``'s writable fields with the given ones replaced (scorers not yet validated)."""
    given = {name: value for name, value in changes.items() if name in EvalSpec.model_fields}
    base = EvalSpec.model_validate(current.model_dump(include=set(EvalSpec.model_fields)))
    return base.model_copy(update=given)


def update_eval(eval_id: str, changes: Mapping[str, Any]) -> Eval:
    """Apply ``changes`` (only the fields the caller gave) to the eval."""
    check_max_concurrency(changes.get("max_concurrency"))

    def attempt() -> Eval:
        current = evals.get_eval(eval_id)
        spec = _updated_spec(current, changes)
        agent = bound_agent(current.project_id, spec.agent_id)
        if spec.dataset_id != current.dataset_id:
            check_bound_dataset(current.project_id, spec.dataset_id)
        if "scorers" in changes or spec.agent_id != current.agent_id:
            env = env_for_project(current.project_id, "update", agent.output_schema)
            spec.scorers = validate_scorers(spec.scorers, env)
        return evals.update_eval(current, spec, agent.version)

    updated: Eval = evals.run_with_retry(attempt)
    return updated
