"""The ``model`` agent adapter: one chat completion against an OpenAI-compatible endpoint.

``POST {base_url}/chat/completions`` (through :mod:`chalicelib.completions`) with the
agent's instructions as the system message and the item's messages after it, at
temperature 0 (evals want repeatable answers). When the run asks for structured output,
the JSON schema goes in ``response_format`` and the answer's content must parse as JSON:
it becomes the reply's ``object``.
"""

from __future__ import annotations

import json
from typing import Any

from chalicelib import completions
from chalicelib.agents.configs import ModelAgentConfig
from chalicelib.agents.contract import AdapterFailed, AgentReply, AgentRequest, Usage
from chalicelib.store import secrets

SOURCE = "the model endpoint"


def chat_request(config: ModelAgentConfig, request: AgentRequest) -> dict[str, Any]:
    """The chat-completions request body for one item."""
    messages: list[dict[str, Any]] = []
    if config.instructions:
        messages.append({"role": "system", "content": config.instructions})
    messages.extend(request.input)
    if request.output_schema is None:
        return completions.request_body(config.model, messages)
    response_format = {
        "type": "json_schema",
        "json_schema": {"name": "output", "schema": request.output_schema, "strict": True},
    }
    return completions.request_body(config.model, messages, response_format=response_format)


def reply_from_completion(
    completion: completions.Completion, output_schema: dict[str, Any] | None
) -> AgentReply:
    """The agent's reply to a completion; structured output must parse as JSON."""
    status = "requires_action" if completion.finish_reason == "tool_calls" else "completed"
    structured = None
    if output_schema is not None and status == "completed":
        try:
            structured = json.loads(completion.content)
        except ValueError:
            raise AdapterFailed(
                f"{SOURCE} was asked for JSON matching output_schema but its answer does not "
                f"parse as JSON (finish_reason={completion.finish_reason!r})"
            ) from None
    usage = None
    if completion.usage_reported:
        usage = Usage(
            input_tokens=completion.usage.input_tokens,
            output_tokens=completion.usage.output_tokens,
            cost_usd=completion.usage.cost_usd,
        )
    return AgentReply(status=status, output=completion.content, object=structured, usage=usage)


def invoke(config: ModelAgentConfig, request: AgentRequest) -> AgentReply:
    endpoint = completions.ChatEndpoint(
        base_url=str(config.base_url),
        model=config.model,
        api_key_env=config.api_key_env,
        secret_key=secrets.opener(request.project_id, config.secret_id),
        timeout_s=config.timeout_s,
        source=SOURCE,
        key_setting="api_key_env of this model agent",
    )
    try:
        data = completions.post_chat(endpoint, chat_request(config, request))
        completion = completions.parse_completion(data, config.model, content_required=False)
    except completions.CompletionFailed as exc:
        raise AdapterFailed(exc.message) from None
    return reply_from_completion(completion, request.output_schema)
