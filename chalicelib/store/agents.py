"""Agents and their immutable versions.

Every create or update writes the agent row, a new ``agent-versions`` row and (on a
rename) the name claims in one transaction. Updates condition on the version they read
and on ``refs_rev`` (see :mod:`chalicelib.store.evals`), so a check made against the
agent's evals cannot be invalidated by an eval write landing in between.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from pynamodb.exceptions import DoesNotExist
from pynamodb.expressions.update import Action

from chalicelib import clock, ids
from chalicelib.domain.catalog import Agent, AgentRelease, AgentVersion, Eval
from chalicelib.errors import Conflict, NotFound, concurrent_update, not_found
from chalicelib.store import names, project_scoped
from chalicelib.store.evals import list_evals_for_agent
from chalicelib.store.models import AgentModel, AgentVersionModel, RunModel
from chalicelib.store.pagination import Listing, Partition, Window, page_of
from chalicelib.store.transactions import TxnRefused, labelled_transaction

KIND = "agent"
_VERSION_KEYS = frozenset({"agent_id", "version"})
#: How often to re-read when the by_agent GSI has not caught up with ``eval_refs``.
_GSI_READ_ATTEMPTS = 5


def _agent(model: AgentModel) -> Agent:
    return Agent(
        id=model.id,
        project_id=model.project_id,
        name=model.name,
        type=model.type,
        config=dict(model.config),
        output_schema=model.output_schema,
        version=int(model.version),
        active_release=(
            AgentRelease.model_validate(model.active_release) if model.active_release else None
        ),
        created_at=model.created_at,
        updated_at=model.updated_at,
    )


def _version(model: AgentVersionModel) -> AgentVersion:
    return AgentVersion(
        agent_id=model.agent_id,
        version=int(model.version),
        name=model.name,
        type=model.type,
        config=dict(model.config),
        output_schema=model.output_schema,
        label=model.label,
        eval_run_id=model.eval_run_id,
        created_at=model.created_at,
    )


def version_row(
    agent: Agent, now: str, label: str | None = None, eval_run_id: str | None = None
) -> AgentVersionModel:
    """The archive row of ``agent`` at its (new) version."""
    return AgentVersionModel(
        agent_id=agent.id,
        version=agent.version,
        name=agent.name,
        type=agent.type,
        config=agent.config,
        output_schema=agent.output_schema,
        label=label,
        eval_run_id=eval_run_id,
        created_at=now,
    )


def config_actions(agent: Agent) -> list[Action]:
    """The updates that make the agent row hold ``agent``'s config at its version."""
    return [
        AgentModel.name.set(agent.name),
        AgentModel.type.set(agent.type),
        AgentModel.config.set(agent.config),
        AgentModel.version.set(agent.version),
        AgentModel.updated_at.set(agent.updated_at),
        AgentModel.output_schema.set(agent.output_schema)
        if agent.output_schema is not None
        else AgentModel.output_schema.remove(),
    ]


def create_agent(
    project_id: str,
    name: str,
    type: str,
    config: dict[str, Any],
    output_schema: dict[str, Any] | None,
    label: str | None = None,
) -> Agent:
    """Write agent, version 1 and the name claim atomically (409 NAME_CONFLICT on a taken name)."""
    agent_id = ids.new_id("agent")
    now, created_key = project_scoped.creation_stamp(agent_id)
    row = AgentModel(
        id=agent_id,
        project_id=project_id,
        name=name,
        version=1,
        type=type,
        config=config,
        output_schema=output_schema,
        created_at=now,
        updated_at=now,
        created_key=created_key,
        eval_refs=0,
        refs_rev=0,
    )
    agent = _agent(row)
    with project_scoped.creating(KIND, row) as txn:
        txn.save("version", version_row(agent, now, label))
    return agent


def get_agent(agent_id: str) -> Agent:
    """The agent at its current version, or NotFound."""
    return _agent(project_scoped.get_or_404(AgentModel, KIND, agent_id))


def get_agent_version(agent_id: str, version: int) -> AgentVersion:
    """One immutable version of the agent, or NotFound."""
    try:
        return _version(AgentVersionModel.get(agent_id, version, consistent_read=True))
    except DoesNotExist:
        raise NotFound(
            f"agent {agent_id} has no version {version}",
            resource_type="agent_version",
            id=agent_id,
            version=version,
        ) from None


def list_agents(project_id: str, window: Window, name: str | None = None) -> Listing[Agent]:
    """The project's agents, oldest first; with ``name``, only the one of that name."""
    if name is not None:
        return project_scoped.list_named(AgentModel, KIND, project_id, name, window, _agent)
    return project_scoped.list_by_project(AgentModel, project_id, window, _agent)


def list_versions(agent_id: str, window: Window) -> Listing[AgentVersion]:
    """The agent's versions, oldest (1) first."""
    return page_of(Partition(AgentVersionModel, agent_id, _VERSION_KEYS), window, _version)


@dataclass(frozen=True)
class UpdateBasis:
    """What an agent update is validated against: the agent and every eval bound to it."""

    agent: Agent
    refs_rev: int
    evals: list[Eval]


def load_for_update(agent_id: str) -> UpdateBasis:
    """Read the agent and its evals consistently with its reference counter."""
    for attempt in range(_GSI_READ_ATTEMPTS):
        try:
            row = AgentModel.get(agent_id, consistent_read=True)
        except DoesNotExist:
            raise not_found(KIND, agent_id) from None
        evals = list_evals_for_agent(agent_id)
        if len(evals) == int(row.eval_refs or 0):
            return UpdateBasis(_agent(row), int(row.refs_rev or 0), evals)
        # A GSI is eventually consistent: an eval written a moment ago may not be listed yet.
        time.sleep(0.05 * (attempt + 1))
    raise concurrent_update(KIND, agent_id)


def update_agent(
    basis: UpdateBasis,
    name: str,
    type: str,
    config: dict[str, Any],
    output_schema: dict[str, Any] | None,
    label: str | None = None,
) -> Agent:
    """Write version n+1; refused if the agent or its evals changed since ``basis`` was read."""
    current = basis.agent
    now = clock.now_iso()
    agent = current.model_copy(
        update={
            "name": name,
            "type": type,
            "config": config,
            "output_schema": output_schema,
            "version": current.version + 1,
            "updated_at": now,
        }
    )
    actions = config_actions(agent)
    try:
        with names.claiming_name(
            KIND, current.project_id, current.id, name, previous=current.name
        ) as txn:
            txn.update(
                "agent",
                AgentModel(id=current.id),
                actions=actions,
                condition=(AgentModel.version == current.version)
                & (AgentModel.refs_rev == basis.refs_rev),
            )
            txn.save(
                "version",
                version_row(agent, now, label),
                condition=AgentVersionModel.version.does_not_exist(),
            )
    except TxnRefused as exc:
        raise project_scoped.lost_race(AgentModel, KIND, current.id) from exc
    return agent


def agent_in_use(agent_id: str, evals: list[Eval]) -> Conflict:
    names = ", ".join(f"{e.name} ({e.id})" for e in evals) or "an eval being written"
    return Conflict(
        f"agent {agent_id} is used by evals: {names}; delete them or bind them to another agent",
        code="AGENT_IN_USE",
        evals=[{"id": e.id, "name": e.name} for e in evals],
    )


def delete_agent(agent: Agent) -> None:
    """Delete the agent, its name claim and its versions; 409 AGENT_IN_USE while evals bind it."""
    try:
        with labelled_transaction() as txn:
            txn.delete(
                "agent",
                AgentModel(id=agent.id),
                condition=(AgentModel.eval_refs == 0) | AgentModel.eval_refs.does_not_exist(),
            )
            txn.release_name(agent.project_id, KIND, agent.name)
    except TxnRefused as exc:
        get_agent(agent.id)  # NotFound when it was deleted meanwhile
        raise agent_in_use(agent.id, list_evals_for_agent(agent.id)) from exc
    with AgentVersionModel.batch_write() as batch:
        for version in AgentVersionModel.query(agent.id, attributes_to_get=["agent_id", "version"]):
            batch.delete(version)


def run_count(agent_id: str) -> int:
    """How many eval runs (of any eval, deleted or not) ran this agent."""
    return int(RunModel.by_agent.count(agent_id))
