"""Staged rollouts of an agent: set, promote (eval-gated), abort, and which version serves.

- :func:`set_release` checks both versions exist and differ, and that a ``promotion_gate``
  is an eval of the agent's project evaluating this agent (400 ``VALIDATION_FAILED``).
- :func:`promote` puts the canary live only when the gate eval has a run that finished
  ``completed``, ``passed: true`` and pinned to the canary (409 ``PROMOTION_GATE_UNMET``
  otherwise); the check and the write are one transaction (``store.releases``).
- :func:`abort` puts the stable version back, ungated.
- :func:`serving_version` assigns a caller to the canary or the stable side: a hash of the
  caller's actor or session id when it names one (the same caller always lands on the
  same side), a random draw otherwise. :func:`run_version` is what an unpinned run uses.

Promote and abort emit ``agents.release.promoted`` / ``agents.release.aborted`` to the sinks
(webhooks) and the bus (event triggers); setting a release publishes
``agents.release.set`` on the bus, so an event trigger can start the gate eval pinned to
the canary (``input.agent_version: "canary"``) without anyone watching.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from chalicelib import clock
from chalicelib.domain.catalog import Agent, AgentRelease
from chalicelib.domain.events import LifecycleEvent
from chalicelib.domain.runs import COMPLETED
from chalicelib.engine import bus
from chalicelib.errors import Conflict, NotFound, ValidationFailed
from chalicelib.plugins.manager import plugins
from chalicelib.store import agents, evals, releases, run_lists
from chalicelib.store.evals import run_with_retry
from chalicelib.store.pagination import Window

RELEASE_SET = "agents.release.set"
RELEASE_PROMOTED = "agents.release.promoted"
RELEASE_ABORTED = "agents.release.aborted"
#: The 400 a ``promotion_gate`` that is no eval of this agent's project evaluating it gets.
GATE_REFUSAL = "promotion_gate {value} is not an eval of this agent's project that evaluates it"
#: Newest runs of the gate eval read when looking for the evidence.
EVIDENCE_SCAN = 1000


def _missing_version(agent_id: str, version: int, field: str) -> ValidationFailed:
    return ValidationFailed(f"agent {agent_id} has no version {version}", field=field)


def _check_versions(agent: Agent, release: AgentRelease) -> None:
    if release.stable_version == release.canary_version:
        raise ValidationFailed(
            "canary_version must differ from stable_version", field="canary_version"
        )
    for field in ("stable_version", "canary_version"):
        version = getattr(release, field)
        try:
            agents.get_agent_version(agent.id, version)
        except NotFound:
            raise _missing_version(agent.id, version, field) from None


def _check_gate(agent: Agent, eval_id: str) -> None:
    """The gate must be an eval of the agent's project that evaluates this agent."""
    refusal = ValidationFailed(GATE_REFUSAL.format(value=eval_id), field="promotion_gate")
    try:
        gate = evals.get_eval(eval_id)
    except NotFound:
        raise refusal from None
    if gate.project_id != agent.project_id or gate.agent_id != agent.id:
        raise refusal


def set_release(agent_id: str, release: AgentRelease) -> Agent:
    """Start or replace the agent's rollout (a release with no gate can be promoted at will)."""

    def attempt() -> Agent:
        basis = releases.read(agent_id)
        if release.promotion_gate is not None:
            _check_gate(basis.agent, release.promotion_gate)
        _check_versions(basis.agent, release)
        return releases.set_release(basis, release)

    agent: Agent = run_with_retry(attempt)
    _announce(RELEASE_SET, agent, release, None, sinks=False)
    return agent


def find_evidence(eval_id: str, canary: int) -> str | None:
    """The newest run of ``eval_id`` that finished completed, passed, pinned to ``canary``."""
    cursor: str | None = None
    seen = 0
    while seen < EVIDENCE_SCAN:
        page = run_lists.list_runs(eval_id, Window(limit=100, cursor=cursor))
        for run in page.items:
            if run.status == COMPLETED and run.passed is True and run.agent_version == canary:
                return run.id
        seen += len(page.items)
        cursor = page.next_cursor
        if cursor is None:
            break
    return None


def gate_unmet(release: AgentRelease) -> Conflict:
    return Conflict(
        f"promotion_gate {release.promotion_gate} has no run that finished completed, "
        f"passed, and was pinned to the canary version {release.canary_version}",
        code="PROMOTION_GATE_UNMET",
        promotion_gate=release.promotion_gate,
        agent_version=release.canary_version,
    )


def _active(basis: releases.ReleaseBasis) -> AgentRelease:
    release = basis.agent.active_release
    if release is None:
        raise releases.no_active_release(basis.agent.id)
    return release


def _evidence(release: AgentRelease) -> releases.Evidence | None:
    gate = release.promotion_gate
    if gate is None:
        return None
    run_id = find_evidence(gate, release.canary_version)
    if run_id is None:  # (a deleted gate eval fails the check made with the write)
        raise gate_unmet(release)
    return releases.Evidence(gate, run_id)


def promote(agent_id: str) -> Agent:
    """The canary goes live and the rollout ends, if the gate (when set) is met."""

    def attempt() -> tuple[Agent, AgentRelease, str | None]:
        basis = releases.read(agent_id)
        release = _active(basis)
        evidence = _evidence(release)
        winner = agents.get_agent_version(agent_id, release.canary_version)
        label = f"promoted from v{release.canary_version}"
        try:
            ended = releases.end_release(releases.Ending(basis, winner, label, evidence))
        except releases.GateRefused:
            raise gate_unmet(release) from None
        return ended, release, evidence.run_id if evidence else None

    agent, release, run_id = run_with_retry(attempt)
    _announce(RELEASE_PROMOTED, agent, release, run_id)
    return agent


def abort(agent_id: str) -> Agent:
    """The stable version goes back live and the rollout ends (never gated)."""

    def attempt() -> tuple[Agent, AgentRelease]:
        basis = releases.read(agent_id)
        release = _active(basis)
        winner = agents.get_agent_version(agent_id, release.stable_version)
        label = f"aborted to v{release.stable_version}"
        return releases.end_release(releases.Ending(basis, winner, label)), release

    agent, release = run_with_retry(attempt)
    _announce(RELEASE_ABORTED, agent, release, None)
    return agent


def serving_version(agent: Agent, assignment_key: str | None) -> int:
    """The version that serves one call: the canary for ``canary_percent`` of callers."""
    release = agent.active_release
    if release is None:
        return agent.version
    if assignment_key:
        digest = hashlib.sha256(f"{agent.id}\x00{assignment_key}".encode()).digest()
        bucket = int.from_bytes(digest[:8]) % 100
    else:
        bucket = random.randrange(100)
    return release.canary_version if bucket < release.canary_percent else release.stable_version


def run_version(agent: Agent) -> int:
    """What a run that names no ``agent_version`` runs: the release's stable version, or the
    live version when no release is active."""
    release = agent.active_release
    return release.stable_version if release is not None else agent.version


def canary_version(agent: Agent) -> int | None:
    release = agent.active_release
    return release.canary_version if release is not None else None


def _announce(
    name: str, agent: Agent, release: AgentRelease, run_id: str | None, sinks: bool = True
) -> None:
    data: dict[str, Any] = {
        "agent_id": agent.id,
        "version": agent.version,
        **release.model_dump(mode="json"),
        "eval_run_id": run_id,
    }
    event = LifecycleEvent(
        id=f"evt_{agent.id}_{name.rsplit('.', 1)[1]}_{agent.updated_at}",
        event=name,
        project_id=agent.project_id,
        resource_type="agent",
        resource_id=agent.id,
        data=data,
        timestamp=clock.now_iso(),
    )
    if sinks:
        plugins().deliver_event(event)
    bus.publish(event)
