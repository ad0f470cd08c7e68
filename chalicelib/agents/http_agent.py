"""The ``http`` agent adapter: POST the item to the agent's URL and read its JSON answer.

This module also owns the *answer shape* that http, lambda and python agents share::

    {"output": str,
     "object": {...},                              # optional: structured output
     "status": "completed" | "requires_action",    # optional, default completed
     "usage": {"input_tokens", "output_tokens", "cost_usd"}}   # optional

and the forwarding of ``tool_context`` as headers (the keys and header names:
:mod:`chalicelib.outbound.tool_context`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from chalicelib import outbound
from chalicelib.agents.configs import HttpAgentConfig
from chalicelib.agents.contract import AdapterFailed, AgentReply, AgentRequest, Usage
from chalicelib.outbound.redaction import body_snippet
from chalicelib.outbound.tool_context import (
    CONTEXT_HEADER_PREFIX,
    forwarded_context,
    is_valid_context_key,
    is_valid_context_value,
)
from chalicelib.store import secrets as secret_store


class AnswerUsage(BaseModel):
    model_config = ConfigDict(extra="ignore")

    input_tokens: int = Field(0, ge=0)
    output_tokens: int = Field(0, ge=0)
    cost_usd: float = Field(0.0, ge=0)


class AgentAnswer(BaseModel):
    """What an http/lambda/python agent must answer. Extra keys are ignored, not refused:
    agents often add their own (trace ids, debug info)."""

    model_config = ConfigDict(extra="ignore")

    output: str
    object: dict[str, Any] | None = None
    status: Literal["completed", "requires_action"] = "completed"
    usage: AnswerUsage | None = None


# --- shared helpers (also used by the lambda, python and model adapters) -------------------


def context_headers(tool_context: Mapping[str, str]) -> dict[str, str]:
    """One ``X-Pawl-Context-<key>`` header per forwarded key. Values are never echoed."""
    headers = {}
    for key, value in forwarded_context(tool_context).items():
        if not is_valid_context_key(key):
            raise AdapterFailed(f"tool_context key {key!r} cannot become an HTTP header name")
        if not is_valid_context_value(value):
            raise AdapterFailed(
                f"tool_context value of {key!r} cannot be sent as a header "
                "(it must be printable ASCII)"
            )
        headers[CONTEXT_HEADER_PREFIX + key] = value
    return headers


def describe_validation_error(exc: ValidationError) -> str:
    """Which fields were wrong and why, without echoing the values."""
    parts = []
    for error in exc.errors(include_url=False, include_input=False):
        where = ".".join(str(p) for p in error["loc"]) or "answer"
        parts.append(f"{where}: {error['msg']}")
    return "; ".join(parts)


def reply_from_answer(data: Any, source: str) -> AgentReply:
    """Validate an agent's decoded answer; ``source`` names the agent in the refusal."""
    try:
        answer = AgentAnswer.model_validate(data)
    except ValidationError as exc:
        raise AdapterFailed(
            f"{source} answered with the wrong shape ({describe_validation_error(exc)}); "
            'expected {"output": str, "object"?: {...}, "status"?, "usage"?}'
        ) from None
    usage = Usage(**answer.usage.model_dump()) if answer.usage is not None else None
    return AgentReply(status=answer.status, output=answer.output, object=answer.object, usage=usage)


def decode_json_answer(
    response: outbound.OutboundResponse, source: str, secrets: Iterable[str]
) -> Any:
    """The JSON body of a 2xx answer; anything else is an :class:`AdapterFailed`."""
    secrets = list(secrets)
    try:
        return outbound.decode_json(response, source, lambda r: body_snippet(r, secrets))
    except outbound.UnusableAnswer as exc:
        raise AdapterFailed(exc.message) from None


# --- the adapter ---------------------------------------------------------------------------


def invoke(config: HttpAgentConfig, request: AgentRequest) -> AgentReply:
    """POST ``request.payload()`` to ``config.url``; an unusable answer raises AdapterFailed."""
    try:
        configured = {
            name: secret_store.fill_header(request.project_id, name, value)
            for name, value in config.headers.items()
        }
    except secret_store.SecretUnavailable as exc:
        raise AdapterFailed(f"http agent call not made: {exc.message}") from None
    headers = {**configured, **context_headers(request.tool_context)}
    secrets = [*configured.values(), *request.tool_context.values()]
    try:
        response = outbound.post_json(
            str(config.url),
            request.payload(),
            headers=headers,
            timeout_s=config.timeout_s,
            # An agent call changes nothing pawl relies on and names its run and item, so
            # one the agent may have seen can be sent again (outbound.retry).
            repeatable=True,
        )
    except outbound.OutboundError as exc:
        raise AdapterFailed(f"http agent call failed: {exc}") from exc
    data = decode_json_answer(response, "the http agent", secrets)
    return reply_from_answer(data, "the http agent")
