"""The ``lambda`` agent adapter: invoke an AWS Lambda function synchronously.

The function receives the same JSON payload an http agent does (plus the forwarded
``tool_context`` under ``"tool_context"``: a Lambda has no headers to carry it) and must
answer the same shape (see :mod:`chalicelib.agents.http_agent`).

The invoke uses its own boto3 client: the shared one reads for 30 s and retries a read
timeout, which would cut off a slow agent and invoke it again (Lambda runs up to 15 min).
"""

from __future__ import annotations

import json
import threading
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from chalicelib import aws
from chalicelib.agents.configs import LambdaAgentConfig
from chalicelib.agents.contract import AdapterFailed, AgentReply, AgentRequest
from chalicelib.agents.http_agent import forwarded_context, redact, reply_from_answer
from chalicelib.settings import get_settings

#: Longer than Lambda's 15-minute maximum, so a slow agent is never cut off and re-invoked.
INVOKE_READ_TIMEOUT_S = 905
INVOKE_CONFIG = aws.CLIENT_CONFIG.merge(
    Config(read_timeout=INVOKE_READ_TIMEOUT_S, retries={"mode": "standard", "max_attempts": 3})
)
MESSAGE_CHARS = 500

_lock = threading.Lock()
# (the shared lambda client it was made alongside, the invoke client). The shared client's
# identity changes whenever aws.reset_clients() runs (new endpoint or AWS stand-in), and
# the invoke client must follow it.
_cached: tuple[Any, Any] | None = None


def invoke_client() -> Any:
    """The boto3 Lambda client used for invocations (created lazily, once per process)."""
    global _cached
    shared = aws.client("lambda")
    cached = _cached
    if cached is not None and cached[0] is shared:
        return cached[1]
    with _lock:
        if _cached is None or _cached[0] is not shared:
            settings = get_settings()
            client = boto3.client(
                "lambda",
                region_name=settings.region,
                endpoint_url=settings.aws_endpoint_url,
                config=INVOKE_CONFIG,
            )
            _cached = (shared, client)
        return _cached[1]


def lambda_payload(request: AgentRequest) -> dict[str, Any]:
    payload = request.payload()
    context = forwarded_context(request.tool_context)
    if context:
        payload["tool_context"] = context
    return payload


def _call(function_name: str, payload: dict[str, Any]) -> dict[str, Any]:
    try:
        encoded = json.dumps(payload).encode()
    except (TypeError, ValueError) as exc:
        raise AdapterFailed(f"the payload cannot be encoded as JSON: {exc}") from None
    try:
        result: dict[str, Any] = invoke_client().invoke(
            FunctionName=function_name, InvocationType="RequestResponse", Payload=encoded
        )
    except ClientError as exc:
        error = exc.response.get("Error", {})
        raise AdapterFailed(
            f"lambda {function_name} could not be invoked: "
            f"{error.get('Code', 'error')}: {error.get('Message', '')}"[:MESSAGE_CHARS]
        ) from None
    except BotoCoreError as exc:
        raise AdapterFailed(
            f"lambda {function_name} could not be invoked: {type(exc).__name__}"
        ) from None
    return result


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
    return redact(f"lambda {function_name} failed ({kind}): {described}", secrets)[:MESSAGE_CHARS]


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
