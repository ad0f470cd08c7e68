"""``lambda`` tools: invoke a function synchronously with the input as its event.

The (narrowed) ``tool_context`` rides in the event under ``tool_context``, only for the
keys ``context_keys`` names: a Lambda has no headers, and an event is easier to leak.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from chalicelib.domain.tools import LambdaToolConfig
from chalicelib.lambda_invoke import LambdaInvokeFailed, invoke_sync, scrub_aws_identifiers
from chalicelib.outbound.redaction import redact
from chalicelib.tools.context import narrowed
from chalicelib.tools.errors import TOOL_ANSWER_INVALID, ToolFailed
from chalicelib.tools.json_object import first_json_object

MESSAGE_CHARS = 500


def event(
    config: LambdaToolConfig, payload: dict[str, Any], tool_context: Mapping[str, str]
) -> dict[str, Any]:
    body = {**config.preset_parameters, **payload}
    context = narrowed(tool_context, config.context_keys)
    if context:
        body["tool_context"] = context
    return body


def _invoke(function_name: str, body: dict[str, Any]) -> dict[str, Any]:
    try:
        return invoke_sync(function_name, body)
    except LambdaInvokeFailed as exc:
        raise ToolFailed(str(exc)[:MESSAGE_CHARS]) from None


def invoke(
    config: LambdaToolConfig, payload: dict[str, Any], tool_context: Mapping[str, str]
) -> Any:
    name = config.function_name
    body = event(config, payload, tool_context)
    result = _invoke(name, body)
    raw = result["Payload"].read().decode("utf-8", errors="replace")
    secrets = list(body.get("tool_context", {}).values())
    if result.get("FunctionError"):
        message = scrub_aws_identifiers(f"lambda {name} failed ({result['FunctionError']}): {raw}")
        raise ToolFailed(redact(message, secrets)[:MESSAGE_CHARS])
    try:
        answer = json.loads(raw)
    except ValueError:
        answer = None
    if isinstance(answer, str):  # a function returning text: read the object inside it
        answer = first_json_object(answer)
    if not isinstance(answer, dict):
        raise ToolFailed(f"lambda {name} answered with no JSON object", TOOL_ANSWER_INVALID)
    return answer
