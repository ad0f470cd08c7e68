"""Deciders, their versions and their decisions as the API shows them.

A decider is a named, versioned question set with one backend that answers it: an AI
provider (one JSON chat completion per decision) or an ``http`` tool. Every create and
update writes an immutable numbered version; a decision names the version it was
answered under, so a later edit never reinterprets an earlier answer.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, field_validator

from chalicelib.domain.base import Resource
from chalicelib.iam.references import reads
from chalicelib.ids import AiProviderId, ToolId

QUESTION_NAME = r"^[A-Za-z_][A-Za-z0-9_]{0,63}$"
MAX_QUESTIONS = 20
MAX_OPTIONS = 20
Label = Annotated[str, Field(min_length=1, max_length=500)]
#: What ``_distinct`` enforces, stated in the document.
DISTINCT: dict[str, Any] = {"uniqueItems": True}


def _distinct(values: list[str], what: str) -> list[str]:
    if len(set(values)) != len(values):
        raise ValueError(f"{what} must be distinct")
    return values


class _QuestionBase(Resource):
    name: str = Field(pattern=QUESTION_NAME, description="Letters, digits, _; 64 at most")
    prompt: str = Field(min_length=1, max_length=10_000)


class PredicateQuestion(_QuestionBase):
    """Whether a condition holds: answered ``{value: bool, probability: 0..1}``."""

    kind: Literal["predicate"]


class ScoreQuestion(_QuestionBase):
    """Where the input sits on an ordered scale: answered with a level index."""

    kind: Literal["score"]
    levels: list[Label] = Field(min_length=2, max_length=MAX_OPTIONS, json_schema_extra=DISTINCT)

    @field_validator("levels")
    @classmethod
    def _distinct_levels(cls, levels: list[str]) -> list[str]:
        return _distinct(levels, "levels")


class ChoiceQuestion(_QuestionBase):
    """Which option applies: answered with one of ``options``."""

    kind: Literal["choice"]
    options: list[Label] = Field(min_length=2, max_length=MAX_OPTIONS, json_schema_extra=DISTINCT)

    @field_validator("options")
    @classmethod
    def _distinct_options(cls, options: list[str]) -> list[str]:
        return _distinct(options, "options")


Question = Annotated[
    PredicateQuestion | ScoreQuestion | ChoiceQuestion, Field(discriminator="kind")
]
Questions = Annotated[list[Question], Field(min_length=1, max_length=MAX_QUESTIONS)]


def check_distinct_names(questions: list[Question]) -> list[Question]:
    names = [q.name for q in questions]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ValueError(f"question names must be distinct (repeated: {', '.join(duplicates)})")
    return questions


class AiProviderBackend(Resource):
    """Answered by one JSON chat completion through a project AI provider."""

    type: Literal["ai_provider"]
    #: The decider's author must be able to read the provider (denied: as missing).
    ai_provider_id: Annotated[
        AiProviderId,
        reads(
            "ai-provider",
            message="AI provider {id} does not exist in this project",
            code="AI_PROVIDER_NOT_FOUND",
        ),
    ]
    model: str | None = Field(None, min_length=1, description="Default: the provider's model")


class ToolBackend(Resource):
    """Answered by an ``http`` tool, sent ``{input, questions}``."""

    type: Literal["tool"]
    #: The decider's author must be able to read the tool (denied: as missing).
    tool_id: Annotated[
        ToolId,
        reads("tool", message="tool {id} does not exist in this project", code="TOOL_NOT_FOUND"),
    ]


Backend = Annotated[AiProviderBackend | ToolBackend, Field(discriminator="type")]


class Decider(Resource):
    id: str
    project_id: str
    name: str
    description: str | None = None
    version: int
    questions: list[Question]
    backend: Backend
    created_at: str
    updated_at: str


class DeciderVersion(Resource):
    """The immutable snapshot a decision is answered under: questions and backend."""

    decider_id: str
    version: int
    name: str
    questions: list[Question]
    backend: Backend
    created_at: str


class DecisionError(Resource):
    code: str
    message: str


class DecisionUsage(Resource):
    """What the decision cost; ``source`` separates decider spend from production spend."""

    source: Literal["decider"] = "decider"
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    model: str | None = None


DecisionStatus = Literal["completed", "failed"]


class Decision(Resource):
    """One decision, written once when it settled (``completed`` with answers, or ``failed``)."""

    id: str
    project_id: str
    decider_id: str
    decider_version: int
    status: DecisionStatus
    input: Any = None
    answers: list[dict[str, Any]] | None = None
    answers_by_name: dict[str, dict[str, Any]] | None = None
    error: DecisionError | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    usage: DecisionUsage = Field(default_factory=DecisionUsage)
    latency_ms: int = 0
    created_at: str
