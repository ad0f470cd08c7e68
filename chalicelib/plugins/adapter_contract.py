"""What an agent adapter is: how pawl calls an agent under test of one ``type``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict


class AdapterConfig(BaseModel):
    """Base of every adapter's config model: unknown keys are refused."""

    model_config = ConfigDict(extra="forbid")


@dataclass(frozen=True)
class AgentRequest:
    """One call of the agent under test."""

    input: list[dict[str, Any]]
    agent_id: str
    agent_version: int
    #: The agent's project: the one whose secrets its config may reference.
    project_id: str | None = None
    run_id: str | None = None
    dataset_item_id: str | None = None
    tool_context: dict[str, str] = field(default_factory=dict)
    output_schema: dict[str, Any] | None = None
    #: In a run: whether the run still wants this call (False once it is cancelled). An
    #: adapter that retries asks it before each new attempt; it is never sent.
    should_continue: Callable[[], bool] | None = field(default=None, compare=False, repr=False)

    def payload(self) -> dict[str, Any]:
        """The JSON body http/lambda/python agents receive."""
        return {
            "input": self.input,
            "agent_id": self.agent_id,
            "agent_version": self.agent_version,
            "run_id": self.run_id,
            "dataset_item_id": self.dataset_item_id,
        }


@dataclass(frozen=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0


@dataclass(frozen=True)
class AgentReply:
    """What the agent answered. ``status`` is completed | requires_action | failed."""

    status: str
    output: str | None = None
    object: Any = None
    usage: Usage | None = None
    error: dict[str, str] | None = None


class AdapterFailed(Exception):
    """The agent could not be called or answered badly: a failed generation."""


@runtime_checkable
class AgentAdapter(Protocol):
    @property
    def config_model(self) -> type[AdapterConfig]:
        """The pydantic model of this type's config."""
        ...

    @property
    def type(self) -> str:
        """The discriminator value that selects this implementation."""
        ...

    def check(self, config: AdapterConfig) -> None:
        """Deployment-level refusals (e.g. python agents where not allowed): ValidationFailed."""
        ...

    def invoke(self, config: AdapterConfig, request: AgentRequest) -> AgentReply:
        """Call the agent. Raise :class:`AdapterFailed` for a failed generation."""
        ...
