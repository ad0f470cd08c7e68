"""An agent's version restore and staged rollout (``/api/v1/agents/{agent_id}/…``).

SOAT's ``restoreAgentVersion``, ``setAgentRelease``, ``promoteAgentRelease`` and
``abortAgentRelease``; the rules are :mod:`chalicelib.engine.releases` (``docs/releases.md``).
"""

from __future__ import annotations

from typing import Annotated, Any

from chalice import Blueprint
from pydantic import Field, StrictInt

from chalicelib.api.access import on
from chalicelib.api.agents import TAG, shown, visible_agent
from chalicelib.api.routing import Call, endpoint
from chalicelib.api.secret_refs import check_config
from chalicelib.domain.base import RequestBody
from chalicelib.domain.catalog import Agent, AgentRelease
from chalicelib.engine import agents as catalog
from chalicelib.engine import releases
from chalicelib.errors import NotFound
from chalicelib.iam.references import reads
from chalicelib.ids import EvalId
from chalicelib.store import agents

bp = Blueprint(__name__)


class RestoreVersion(RequestBody):
    label: str | None = Field(
        None, min_length=1, max_length=200, description="Defaults to `restored from v<version>`"
    )


class SetRelease(RequestBody):
    stable_version: StrictInt = Field(ge=1, description="An existing version to serve as baseline")
    canary_version: StrictInt = Field(ge=1, description="An existing version to trial")
    canary_percent: StrictInt = Field(ge=0, le=100, description="Traffic share of the canary")
    #: Naming the gate reads it: an eval the caller may not read is answered as a missing one.
    promotion_gate: Annotated[EvalId, reads("eval", message=releases.GATE_REFUSAL)] | None = Field(
        None, description="An eval of this agent that must pass pinned to the canary"
    )


def _version_number(agent_id: str, raw: str) -> int:
    if not raw.isdigit() or int(raw) < 1:
        raise NotFound(
            f"agent {agent_id} has no version {raw!r}", resource_type="agent_version", id=agent_id
        )
    return int(raw)


@endpoint(
    bp,
    "/api/v1/agents/{agent_id}/versions/{version}/restore",
    "POST",
    access=on("agents:RestoreAgentVersion", "agent_id"),
    body=RestoreVersion,
    response=Agent,
    tag=TAG,
    operation_id="restoreAgentVersion",
)
def restore_agent_version(call: Call[RestoreVersion, Any]) -> Agent:
    """Copy an archived version onto the agent as a new version (a no-op when unchanged)."""
    agent = visible_agent(call.caller, call.path["agent_id"])
    version = _version_number(agent.id, call.path["version"])
    archived = agents.get_agent_version(agent.id, version)
    check_config(call.caller, agent.project_id, archived.config)
    return shown(catalog.restore_version(agent.id, version, call.body.label))


@endpoint(
    bp,
    "/api/v1/agents/{agent_id}/release",
    "PUT",
    access=on("agents:SetAgentRelease", "agent_id"),
    body=SetRelease,
    response=Agent,
    tag=TAG,
    operation_id="setAgentRelease",
)
def set_agent_release(call: Call[SetRelease, Any]) -> Agent:
    """Serve two archived versions side by side: the canary to ``canary_percent`` of callers."""
    agent = visible_agent(call.caller, call.path["agent_id"])
    release = AgentRelease.model_validate(call.body.model_dump())
    return shown(releases.set_release(agent.id, release))


@endpoint(
    bp,
    "/api/v1/agents/{agent_id}/release/promote",
    "POST",
    access=on("agents:PromoteAgentRelease", "agent_id"),
    response=Agent,
    tag=TAG,
    operation_id="promoteAgentRelease",
)
def promote_agent_release(call: Call[Any, Any]) -> Agent:
    """Put the canary live and end the rollout; 409 ``PROMOTION_GATE_UNMET`` without evidence."""
    agent = visible_agent(call.caller, call.path["agent_id"])
    return shown(releases.promote(agent.id))


@endpoint(
    bp,
    "/api/v1/agents/{agent_id}/release/abort",
    "POST",
    access=on("agents:AbortAgentRelease", "agent_id"),
    response=Agent,
    tag=TAG,
    operation_id="abortAgentRelease",
)
def abort_agent_release(call: Call[Any, Any]) -> Agent:
    """Put the stable version back live and end the rollout (never gated)."""
    agent = visible_agent(call.caller, call.path["agent_id"])
    return shown(releases.abort(agent.id))
