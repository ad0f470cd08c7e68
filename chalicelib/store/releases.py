"""An agent's staged rollout: the ``active_release`` on its row, and how a rollout ends.

Setting a release is one conditional update of the agent row that bumps ``release_rev``.
Ending one (promote or abort) is one transaction that is its own check: the agent row is
updated only if its ``release_rev`` and ``version`` are still those the caller read and
a release is still active, and — for a gated promotion — only together with condition
checks that the gate eval still exists and evaluates this agent and that the evidence run
finished ``completed``, ``passed`` and pinned to the canary. Of a promote and an abort (or
two promotes) racing, exactly one commits; the other's conditions fail and nothing of it
is written.
"""

from __future__ import annotations

from dataclasses import dataclass

from pynamodb.exceptions import DoesNotExist

from chalicelib import clock
from chalicelib.domain.catalog import Agent, AgentRelease, AgentVersion
from chalicelib.domain.runs import COMPLETED
from chalicelib.errors import Conflict, NameConflict, concurrent_update, not_found
from chalicelib.store import names, project_scoped
from chalicelib.store.agents import KIND, _agent, config_actions, version_row
from chalicelib.store.models import AgentModel, AgentVersionModel, EvalModel, RunModel
from chalicelib.store.transactions import LabelledTxn, TxnRefused, labelled_transaction

#: Labels of the transaction's operations whose failure means "the gate is not met".
GATE_LABELS = frozenset({"gate_eval", "evidence"})


@dataclass(frozen=True)
class ReleaseBasis:
    """The agent as a release write read it, with the revision its write conditions on."""

    agent: Agent
    release_rev: int


@dataclass(frozen=True)
class Evidence:
    """The run that clears a release's gate: a run of ``eval_id`` pinned to the canary."""

    eval_id: str
    run_id: str


@dataclass(frozen=True)
class Ending:
    """How a rollout ends: ``winner``'s config goes live (as a new version when the live
    config differs from it, labelled ``label``), the release is cleared."""

    basis: ReleaseBasis
    winner: AgentVersion
    label: str
    evidence: Evidence | None = None


class GateRefused(Exception):
    """The gate's condition checks failed at commit: the evidence was not (or no longer) valid."""


def read(agent_id: str) -> ReleaseBasis:
    """The agent and its ``release_rev``, read consistently (404 when it does not exist)."""
    try:
        row = AgentModel.get(agent_id, consistent_read=True)
    except DoesNotExist:
        raise not_found(KIND, agent_id) from None
    return ReleaseBasis(_agent(row), int(row.release_rev or 0))


def no_active_release(agent_id: str) -> Conflict:
    return Conflict(
        f"agent {agent_id} has no active release", code="NO_ACTIVE_RELEASE", agent_id=agent_id
    )


def set_release(basis: ReleaseBasis, release: AgentRelease) -> Agent:
    """Start (or replace) the rollout; refused (409/404) if the release changed since read."""
    agent = basis.agent
    now = clock.now_iso()
    try:
        with labelled_transaction() as txn:
            txn.update(
                "agent",
                AgentModel(id=agent.id),
                actions=[
                    AgentModel.active_release.set(release.model_dump(mode="json")),
                    AgentModel.release_rev.add(1),
                    AgentModel.updated_at.set(now),
                ],
                condition=AgentModel.id.exists() & (AgentModel.release_rev == basis.release_rev),
            )
    except TxnRefused as exc:
        raise project_scoped.lost_race(AgentModel, KIND, agent.id) from exc
    return agent.model_copy(update={"active_release": release, "updated_at": now})


def _same_config(agent: Agent, version: AgentVersion) -> bool:
    return (agent.name, agent.type, agent.config, agent.output_schema) == (
        version.name,
        version.type,
        version.config,
        version.output_schema,
    )


def _after(ending: Ending, now: str) -> tuple[Agent, bool]:
    """The agent once the rollout ended, and whether that writes a new version."""
    current, winner = ending.basis.agent, ending.winner
    changes: dict[str, object] = {"active_release": None, "updated_at": now}
    writes_version = not _same_config(current, winner)
    if writes_version:
        changes.update(
            name=winner.name,
            type=winner.type,
            config=winner.config,
            output_schema=winner.output_schema,
            version=current.version + 1,
        )
    return current.model_copy(update=changes), writes_version


def _check_evidence(txn: LabelledTxn, evidence: Evidence, agent_id: str, canary: int) -> None:
    """The gate eval still exists and evaluates the agent; the run still clears it."""
    txn.check("gate_eval", EvalModel, evidence.eval_id, EvalModel.agent_id == agent_id)
    txn.check(
        "evidence",
        RunModel,
        evidence.run_id,
        (RunModel.status == COMPLETED)
        & (RunModel.passed == True)  # noqa: E712 (a condition expression)
        & (RunModel.agent_version == canary)
        & (RunModel.eval_id == evidence.eval_id),
    )


def end_release(ending: Ending) -> Agent:
    """Put ``ending.winner``'s config live and clear the release, atomically with every check.

    Raises :class:`GateRefused` when the evidence no longer holds, 409 ``NO_ACTIVE_RELEASE``
    when the release ended meanwhile, 409 ``CONCURRENT_UPDATE`` when it (or the live config)
    changed, 404 when the agent was deleted.
    """
    current = ending.basis.agent
    canary = current.active_release.canary_version if current.active_release else 0
    agent, writes_version = _after(ending, clock.now_iso())
    evidence = ending.evidence
    actions = [
        *config_actions(agent),
        AgentModel.active_release.remove(),
        AgentModel.release_rev.add(1),
    ]
    condition = (
        AgentModel.active_release.exists()
        & (AgentModel.release_rev == ending.basis.release_rev)
        & (AgentModel.version == current.version)
    )
    run_id = evidence.run_id if evidence else None
    try:
        with names.claiming_name(
            KIND, current.project_id, current.id, agent.name, previous=current.name
        ) as txn:
            if evidence is not None:
                _check_evidence(txn, evidence, current.id, canary)
            txn.update("agent", AgentModel(id=current.id), actions=actions, condition=condition)
            if writes_version:
                row = version_row(agent, agent.updated_at, ending.label, run_id)
                txn.save("version", row, condition=AgentVersionModel.version.does_not_exist())
            elif run_id is not None:
                txn.update(
                    "version",
                    AgentVersionModel(agent_id=current.id, version=current.version),
                    actions=[AgentVersionModel.eval_run_id.set(run_id)],
                    condition=AgentVersionModel.version.exists(),
                )
    except TxnRefused as exc:
        if exc.labels & GATE_LABELS:
            raise GateRefused() from exc
        raise _lost(ending.basis) or concurrent_update(KIND, current.id) from exc
    except NameConflict as exc:  # the winner's name is taken: by this agent, when it lost a race
        raise _lost(ending.basis) or exc from exc
    return agent


def _lost(basis: ReleaseBasis) -> Exception | None:
    """Why an ending's write was refused, if the agent changed since ``basis``: it is gone,
    its release ended, or something else about it changed (None: it did not)."""
    agent_id = basis.agent.id
    try:
        row = AgentModel.get(agent_id, consistent_read=True)
    except DoesNotExist:
        return not_found(KIND, agent_id)
    if not row.active_release:
        return no_active_release(agent_id)
    if int(row.release_rev or 0) != basis.release_rev or int(row.version) != basis.agent.version:
        return concurrent_update(KIND, agent_id)
    return None
