"""What a scorer is: the contract every built-in and third-party scorer implements.

A scorer turns one item's output into ``{score: 0..1, passed}``. It never returns a
made-up zero: when it cannot reach a verdict it raises :class:`ScorerFailed`, and the
engine records the item as errored (errors are not zeros).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from chalicelib.domain.ai_providers import AiProvider
from chalicelib.domain.deciders import Decider
from chalicelib.domain.tools import Tool


class ScorerConfig(BaseModel):
    """Base of every scorer config model: unknown keys are refused."""

    model_config = ConfigDict(extra="forbid")
    type: str


#: A named scorer's ``name`` (its key in results and aggregates): short, and safe as a JSON
#: key path.
ScorerName = Annotated[str, Field(pattern=r"^[A-Za-z][A-Za-z0-9_-]{0,63}$")]


@dataclass(frozen=True)
class UsageRecord:
    """Spend a scorer caused (a judge completion, an embedding, a decision)."""

    source: str
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    model: str | None = None


@dataclass(frozen=True)
class ScoreOutcome:
    score: float
    passed: bool
    reasoning: str | None = None
    decision_id: str | None = None
    usage: tuple[UsageRecord, ...] = ()


class ScorerFailed(Exception):
    """The scorer could not reach a verdict; the item is errored with ``code``."""

    def __init__(self, message: str, code: str = "EVAL_SCORING_FAILED", **meta: Any) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.meta = meta


@dataclass(frozen=True)
class ItemContext:
    """Everything a scorer may read about one item's execution.

    ``has_object`` is False when the agent has no ``output_schema``: ``object`` is then
    *absent* (not null) from the JSON Logic / tool context.
    """

    input: list[dict[str, Any]]
    output: str | None
    expected: str | None
    item_metadata: dict[str, Any]
    object: Any = None
    has_object: bool = False
    #: The agent version's ``output_schema`` (the ``output_schema`` scorer's fallback schema).
    output_schema: dict[str, Any] | None = None

    def as_variables(self) -> dict[str, Any]:
        """The variables a json_logic expression or a tool scorer sees."""
        data: dict[str, Any] = {
            "input": self.input,
            "output": self.output,
            "expected": self.expected,
            "item": {"metadata": self.item_metadata},
        }
        if self.has_object:
            data["object"] = self.object
        return data


@dataclass(frozen=True)
class ScoringEnv:
    """Where an item is being scored: project, eval, run, item, and the run's pinned context."""

    project_id: str
    eval_id: str | None = None
    run_id: str | None = None
    dataset_item_id: str | None = None
    tool_context: dict[str, str] = field(default_factory=dict)
    decider_versions: dict[str, int] = field(default_factory=dict)
    #: False once the run is cancelled (or ended): a scorer that makes several calls, or
    #: retries one, asks before each; pawl itself asks before calling the scorer.
    should_continue: Callable[[], bool] = field(default=lambda: True, compare=False, repr=False)


#: The resource kinds a scorer config may name, and what a lookup of one finds: the
#: domain resource, or a mapping of its fields (a plugin's or a test's lookup).
CatalogKind = Literal["tool", "decider", "ai_provider"]
CatalogResource = Tool | Decider | AiProvider | Mapping[str, object]
#: The project-level settings a scorer may fall back on.
ProjectSetting = Literal["default_ai_provider_id"]


class ValidationEnv(Protocol):
    """What config validation may look up (implemented by the service layer).

    ``phase`` is ``"create"``, ``"update"`` or ``"run_start"`` (authoritative).
    """

    project_id: str
    phase: str
    agent_output_schema: dict[str, Any] | None

    def lookup(self, kind: CatalogKind, resource_id: str) -> CatalogResource | None:
        """A resource of the eval's project (``tool``, ``decider``, ``ai_provider``) or None."""
        ...

    def project_default(self, setting: ProjectSetting) -> str | None:
        """A project-level default (for example ``default_ai_provider_id``)."""
        ...


@runtime_checkable
class Scorer(Protocol):
    """One scorer type.

    ``type`` is the discriminator in an eval's ``scorers`` list. ``named`` scorers
    (``tool``, ``decider``) may appear several times under distinct ``name``s; every
    other type at most once. ``config_model`` validates the shape (unknown keys
    refused); :meth:`check` runs the cross-resource rules.
    """

    @property
    def config_model(self) -> type[ScorerConfig]:
        """The pydantic model of this type's config."""
        ...

    @property
    def type(self) -> str:
        """The discriminator value that selects this implementation."""
        ...

    @property
    def named(self) -> bool:
        """True when several instances may coexist under distinct ``name``s."""
        ...

    def check(self, config: ScorerConfig, env: ValidationEnv) -> None:
        """Raise :class:`chalicelib.errors.ValidationFailed` when the config cannot be used."""
        ...

    def score(self, config: ScorerConfig, item: ItemContext, env: ScoringEnv) -> ScoreOutcome:
        """Score one item, or raise :class:`ScorerFailed`."""
        ...


#: Optional on a scorer: ``project_fallbacks(config: dict) -> tuple[ProjectSetting, ...]``,
#: the project settings a stored config falls back on (an unpinned ``llm_judge``: the
#: default AI provider). The API authorizes the resource each names as the caller at eval
#: create/update and run start, as it does the ids a config names (docs/iam.md).
PROJECT_FALLBACKS = "project_fallbacks"
