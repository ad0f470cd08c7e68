"""The ``model`` agent adapter: one chat completion against an OpenAI-compatible endpoint.

``POST {base_url}/chat/completions`` with the agent's instructions as the system message
and the item's messages after it, at temperature 0 (evals want repeatable answers). When the
run asks for structured output, the JSON schema goes in ``response_format`` and the
answer's content must parse as JSON: it becomes the reply's ``object``.
"""

from __future__ import annotations

import json
import os
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from chalicelib import outbound
from chalicelib.agents.configs import ModelAgentConfig
from chalicelib.agents.contract import AdapterFailed, AgentReply, AgentRequest, Usage
from chalicelib.agents.http_agent import decode_json_answer, describe_validation_error

SOURCE = "the model endpoint"


class _Message(BaseModel):
    model_config = ConfigDict(extra="ignore")

    content: str | None = None


class _Choice(BaseModel):
    model_config = ConfigDict(extra="ignore")

    message: _Message
    finish_reason: str | None = None


class _Usage(BaseModel):
    model_config = ConfigDict(extra="ignore")

    prompt_tokens: int = Field(0, ge=0)
    completion_tokens: int = Field(0, ge=0)


class _ChatCompletion(BaseModel):
    model_config = ConfigDict(extra="ignore")

    choices: list[_Choice] = Field(min_length=1)
    usage: _Usage | None = None


def chat_request(config: ModelAgentConfig, request: AgentRequest) -> dict[str, Any]:
    """The chat-completions request body for one item."""
    messages: list[dict[str, Any]] = []
    if config.instructions:
        messages.append({"role": "system", "content": config.instructions})
    messages.extend(request.input)
    body: dict[str, Any] = {"model": config.model, "messages": messages, "temperature": 0}
    if request.output_schema is not None:
        body["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": "output", "schema": request.output_schema, "strict": True},
        }
    return body


def _api_key(config: ModelAgentConfig) -> str | None:
    if not config.api_key_env:
        return None
    key = os.environ.get(config.api_key_env)
    if not key:
        raise AdapterFailed(
            f"environment variable {config.api_key_env} (api_key_env of this model agent) "
            "is not set in pawl's environment"
        )
    return key


def reply_from_completion(data: Any, output_schema: dict[str, Any] | None) -> AgentReply:
    """Read a decoded chat completion; structured output must parse as JSON."""
    try:
        completion = _ChatCompletion.model_validate(data)
    except ValidationError as exc:
        raise AdapterFailed(
            f"{SOURCE} answered with something that is not a chat completion "
            f"({describe_validation_error(exc)})"
        ) from None
    choice = completion.choices[0]
    status = "requires_action" if choice.finish_reason == "tool_calls" else "completed"
    content = choice.message.content or ""
    structured = None
    if output_schema is not None and status == "completed":
        try:
            structured = json.loads(content)
        except ValueError:
            raise AdapterFailed(
                f"{SOURCE} was asked for JSON matching output_schema but its answer does not "
                f"parse as JSON (finish_reason={choice.finish_reason!r})"
            ) from None
    usage = None
    if completion.usage is not None:
        usage = Usage(
            input_tokens=completion.usage.prompt_tokens,
            output_tokens=completion.usage.completion_tokens,
        )
    return AgentReply(status=status, output=content, object=structured, usage=usage)


def invoke(config: ModelAgentConfig, request: AgentRequest) -> AgentReply:
    api_key = _api_key(config)
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    url = str(config.base_url).rstrip("/") + "/chat/completions"
    try:
        response = outbound.post_json(
            url, chat_request(config, request), headers=headers, timeout_s=config.timeout_s
        )
    except outbound.OutboundError as exc:
        raise AdapterFailed(f"model call failed: {exc}") from exc
    data = decode_json_answer(response, SOURCE, [api_key] if api_key else [])
    return reply_from_completion(data, request.output_schema)
