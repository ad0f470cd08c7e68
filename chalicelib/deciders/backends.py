"""The two backends that answer a decider: an AI provider, or an ``http`` tool.

:func:`bind_backend` resolves a backend in the decider's project and refuses one that
cannot answer (400, before any decision is written); :meth:`BoundBackend.answer` asks it
and returns its raw answer object, or raises :class:`DecisionFailed` with the code the
decision records.

Decisions are requested with no credential: a tool backend gets no ``tool_context``,
so a tool whose headers need one fails the decision with ``MISSING_TOOL_CONTEXT_KEY``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from chalicelib import completions
from chalicelib.deciders import frame
from chalicelib.deciders.answer_validation import DECISION_ANSWER_INVALID
from chalicelib.domain.ai_providers import AiProvider
from chalicelib.domain.deciders import (
    AiProviderBackend,
    Backend,
    DecisionUsage,
    Question,
    ToolBackend,
)
from chalicelib.domain.tools import Tool
from chalicelib.errors import ValidationFailed
from chalicelib.store import ai_providers, secrets, tools
from chalicelib.tools import MISSING_TOOL_CONTEXT_KEY, MissingContextKey, ToolFailed, call_tool
from chalicelib.tools.json_object import first_json_object

COMPLETION_FAILED = "COMPLETION_FAILED"
#: What a decider sends a tool; a tool presetting either would overwrite the decision's own.
TOOL_INPUT_KEYS = ("input", "questions")


class DecisionFailed(Exception):
    """The backend gave no usable answer; ``usage`` is what the attempt still cost."""

    def __init__(self, code: str, message: str, usage: DecisionUsage | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.usage = usage or DecisionUsage()


@dataclass(frozen=True)
class BackendAnswer:
    answer: dict[str, Any]
    usage: DecisionUsage


class BoundBackend(Protocol):
    def answer(self, questions: list[Question], value: Any) -> BackendAnswer: ...


@dataclass(frozen=True)
class AiProviderAnswerer:
    provider: AiProvider
    model: str

    def answer(self, questions: list[Question], value: Any) -> BackendAnswer:
        endpoint = completions.ChatEndpoint(
            base_url=self.provider.base_url,
            model=self.model,
            api_key_env=self.provider.api_key_env,
            secret_key=secrets.opener(self.provider.project_id, self.provider.secret_id),
        )
        try:
            completion = completions.complete(endpoint, frame.messages(questions, value))
        except completions.CompletionFailed as exc:
            raise DecisionFailed(COMPLETION_FAILED, exc.message) from None
        usage = DecisionUsage(
            input_tokens=completion.usage.input_tokens,
            output_tokens=completion.usage.output_tokens,
            cost_usd=completion.usage.cost_usd,
            model=self.model,
        )
        parsed = first_json_object(completion.content)
        if parsed is None:
            raise DecisionFailed(
                DECISION_ANSWER_INVALID, "the model's reply holds no JSON object", usage
            )
        return BackendAnswer(parsed, usage)


@dataclass(frozen=True)
class ToolAnswerer:
    tool: Tool

    def answer(self, questions: list[Question], value: Any) -> BackendAnswer:
        payload = {"input": value, "questions": [q.model_dump(mode="json") for q in questions]}
        try:
            answer = call_tool(self.tool, payload)
        except MissingContextKey as exc:
            raise DecisionFailed(MISSING_TOOL_CONTEXT_KEY, str(exc)) from None
        except ToolFailed as exc:
            raise DecisionFailed(exc.code, exc.message) from None
        return BackendAnswer(answer, DecisionUsage())


def _tool_answerer(project_id: str, backend: ToolBackend) -> ToolAnswerer:
    tool = tools.find_project_tool(project_id, backend.tool_id)
    if tool is None:
        raise ValidationFailed(
            f"tool {backend.tool_id} does not exist in this project",
            field="backend.tool_id",
            code="TOOL_NOT_FOUND",
        )
    if tool.type != "http":
        raise ValidationFailed(
            f"tool {tool.id} is a {tool.type} tool; only an http tool can answer a decider",
            field="backend.tool_id",
            code="DECIDER_TOOL_NOT_CALLABLE",
        )
    presets = tool.config.get("preset_parameters") or {}
    pinned = [key for key in TOOL_INPUT_KEYS if key in presets]
    if pinned:
        raise ValidationFailed(
            f"tool {tool.id} presets {', '.join(pinned)}, which would overwrite what the "
            "decider sends it",
            field="backend.tool_id",
            code="DECIDER_TOOL_NOT_CALLABLE",
        )
    return ToolAnswerer(tool)


def _ai_answerer(project_id: str, backend: AiProviderBackend) -> AiProviderAnswerer:
    provider = ai_providers.find_provider(project_id, backend.ai_provider_id)
    if provider is None:
        raise ValidationFailed(
            f"AI provider {backend.ai_provider_id} does not exist in this project",
            field="backend.ai_provider_id",
            code="AI_PROVIDER_NOT_FOUND",
        )
    return AiProviderAnswerer(provider, backend.model or provider.default_model)


def bind_backend(project_id: str, backend: Backend) -> BoundBackend:
    """The backend, resolved in ``project_id``; 400 when it cannot answer a decider."""
    if isinstance(backend, ToolBackend):
        return _tool_answerer(project_id, backend)
    return _ai_answerer(project_id, backend)
