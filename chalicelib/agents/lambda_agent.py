"""The ``lambda`` agent adapter: invoke an AWS Lambda function synchronously.

The function receives the same JSON payload an http agent does (plus the forwarded
``tool_context`` under ``"tool_context"``: a Lambda has no headers to carry it) and must
answer the same shape (see :mod:`chalicelib.agents.http_agent`).

The call itself is :func:`chalicelib.lambda_invoke.invoke_sync`, shared with lambda tools.
"""

from __future__ import annotations

import json
from typing import Any

from chalicelib.agents.configs import LambdaAgentConfig
from chalicelib.agents.contract import AdapterFailed, AgentReply, AgentRequest
from chalicelib.agents.http_agent import reply_from_answer
from chalicelib.lambda_invoke import (
    LambdaInvokeFailed,
    invoke_client,
    invoke_sync,
    scrub_aws_identifiers,
)
from chalicelib.outbound.redaction import redact
from chalicelib.outbound.tool_context import forwarded_context

__all__ = ["invoke", "invoke_client", "lambda_payload"]

MESSAGE_CHARS = 500


def lambda_payload(request: AgentRequest) -> dict[str, Any]:
    payload = request.payload()
    context = forwarded_context(request.tool_context)
    if context:
        payload["tool_context"] = context
    return payload


def _call(function_name: str, payload: dict[str, Any]) -> dict[str, Any]:
    try:
        return invoke_sync(function_name, payload)
    except LambdaInvokeFailed as exc:
        raise AdapterFailed(str(exc)[:MESSAGE_CHARS]) from None


def _function_error(function_name: str, kind: str, raw: bytes, secrets: list[str]) -> str:
    """The message of a function that raised: its errorType and errorMessage, redacted."""
    try:
        detail = json.loads(raw)
    except ValueError:
        detail = None
    if isinstance(detail, dict):
        described = f"{detail.get('errorType', kind)}: {detail.get('errorMessage', '')}"
    else:
        described = raw.decode("utf-8", errors="replace")
    message = scrub_aws_identifiers(f"lambda {function_name} failed ({kind}): {described}")
    return redact(message, secrets)[:MESSAGE_CHARS]


def invoke(config: LambdaAgentConfig, request: AgentRequest) -> AgentReply:
    name = config.function_name
    payload = lambda_payload(request)
    result = _call(name, payload)
    raw = result["Payload"].read()
    secrets = list(request.tool_context.values())
    if result.get("FunctionError"):
        raise AdapterFailed(_function_error(name, result["FunctionError"], raw, secrets))
    try:
        data = json.loads(raw)
    except ValueError:
        raise AdapterFailed(f"lambda {name} answered with a payload that is not JSON") from None
    return reply_from_answer(data, f"lambda {name}")
