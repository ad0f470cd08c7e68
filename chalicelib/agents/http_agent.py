"""The ``http`` agent adapter: POST the item to the agent's URL and read its JSON answer.

This module also owns the *answer shape* that http, lambda and python agents share::

    {"output": str,
     "object": {...},                              # optional: structured output
     "status": "completed" | "requires_action",    # optional, default completed
     "usage": {"input_tokens", "output_tokens", "cost_usd"}}   # optional

and the forwarding of ``tool_context``: one ``X-Pawl-Context-<key>`` header per key, with
the reserved identity keys dropped (an eval generation has no session or actor).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from chalicelib import outbound
from chalicelib.agents.configs import HttpAgentConfig
from chalicelib.agents.contract import AdapterFailed, AgentReply, AgentRequest, Usage
from chalicelib.domain.runs import is_reserved_context_key

CONTEXT_HEADER_PREFIX = "X-Pawl-Context-"
_HEADER_TOKEN = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")
_VISIBLE_ASCII = re.compile(r"^[\x20-\x7e\t]*$")
SNIPPET_CHARS = 300


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


def forwarded_context(tool_context: Mapping[str, str]) -> dict[str, str]:
    """The ``tool_context`` keys an eval generation forwards: reserved identity keys dropped,
    in any casing."""
    return {k: v for k, v in tool_context.items() if not is_reserved_context_key(k)}


def is_valid_context_key(key: str) -> bool:
    """True when ``key`` can become part of an HTTP header name."""
    return bool(_HEADER_TOKEN.match(key))


def context_headers(tool_context: Mapping[str, str]) -> dict[str, str]:
    """One ``X-Pawl-Context-<key>`` header per forwarded key. Values are never echoed."""
    headers = {}
    for key, value in forwarded_context(tool_context).items():
        if not is_valid_context_key(key):
            raise AdapterFailed(f"tool_context key {key!r} cannot become an HTTP header name")
        if not _VISIBLE_ASCII.match(value):
            raise AdapterFailed(
                f"tool_context value of {key!r} cannot be sent as a header "
                "(it must be printable ASCII)"
            )
        headers[CONTEXT_HEADER_PREFIX + key] = value
    return headers


def redact(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every secret value (4+ chars) replaced: for error messages we store."""
    for secret in sorted({s for s in secrets if len(s) >= 4}, key=len, reverse=True):
        text = text.replace(secret, "***")
    return text


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


def body_snippet(response: outbound.OutboundResponse, secrets: Iterable[str]) -> str:
    """The start of an answer body for an error message, with secrets redacted."""
    text = response.text.strip()
    if not text:
        return "(empty body)"
    shortened = text[:SNIPPET_CHARS] + ("..." if len(text) > SNIPPET_CHARS else "")
    return redact(shortened, secrets)


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
    headers = {**config.headers, **context_headers(request.tool_context)}
    secrets = [*config.headers.values(), *request.tool_context.values()]
    try:
        response = outbound.post_json(
            str(config.url), request.payload(), headers=headers, timeout_s=config.timeout_s
        )
    except outbound.OutboundError as exc:
        raise AdapterFailed(f"http agent call failed: {exc}") from exc
    data = decode_json_answer(response, "the http agent", secrets)
    return reply_from_answer(data, "the http agent")
