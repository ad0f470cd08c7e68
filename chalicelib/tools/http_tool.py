"""``http`` tools: POST the input as JSON; read a JSON object (or text holding one) back.

Header values may carry ``{{context:KEY}}`` tokens, filled from the tool's share of the
run's ``tool_context`` (``context_keys`` narrows it); each key of that share is also sent
as one ``X-Pawl-Context-<key>`` header, as for agents.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from chalicelib import outbound
from chalicelib.domain.tools import HttpToolConfig
from chalicelib.outbound.redaction import body_snippet
from chalicelib.outbound.tool_context import CONTEXT_HEADER_PREFIX
from chalicelib.store import secrets as secret_store
from chalicelib.tools.context import fill_text, fill_value, narrowed
from chalicelib.tools.errors import TOOL_ANSWER_INVALID, ToolFailed
from chalicelib.tools.json_object import decode_answer

_VISIBLE_ASCII = re.compile(r"^[\x20-\x7e\t]*$")


def _filled(name: str, value: str, context: Mapping[str, str], project_id: str | None) -> str:
    try:
        return secret_store.fill_header(
            project_id, name, value, lambda text: fill_text(text, context, f"header {name}")
        )
    except secret_store.SecretUnavailable as exc:
        raise ToolFailed(f"the http tool call was not made: {exc.message}") from None


def request_headers(
    config: HttpToolConfig, context: Mapping[str, str], project_id: str | None = None
) -> dict[str, str]:
    """The configured headers with tokens filled (``{{secret:...}}`` from the project's
    secrets, ``{{context:KEY}}`` from the context, in one pass), then one header per
    context key."""
    headers = {
        name: _filled(name, value, context, project_id) for name, value in config.headers.items()
    }
    for key, value in context.items():
        headers[CONTEXT_HEADER_PREFIX + key] = value
    for name, value in headers.items():
        if not _VISIBLE_ASCII.match(value):
            raise ToolFailed(f"the value of header {name} is not printable ASCII")
    return headers


def invoke(
    config: HttpToolConfig,
    payload: dict[str, Any],
    tool_context: Mapping[str, str],
    project_id: str | None = None,
) -> Any:
    """POST ``payload`` (over the tool's own preset_parameters) and decode the answer;
    ``project_id``: the tool's project, whose secrets its headers may reference."""
    context = narrowed(tool_context, config.context_keys)
    headers = request_headers(config, context, project_id)
    body = {**fill_value(config.preset_parameters, context, "preset_parameters"), **payload}
    secrets = [*headers.values(), *context.values()]
    try:
        response = outbound.post_json(
            str(config.url), body, headers=headers, timeout_s=config.timeout_s
        )
    except outbound.OutboundError as exc:
        raise ToolFailed(f"the http tool call failed: {exc}") from None
    if not response.ok:
        raise ToolFailed(
            f"the http tool answered HTTP {response.status}: {body_snippet(response, secrets)}"
        )
    content_type = response.headers.get("content-type", "")
    answer = decode_answer(response.text, is_json="json" in content_type.lower())
    if answer is None:
        raise ToolFailed(
            f"the http tool's answer holds no JSON object ({content_type or 'no content-type'}): "
            f"{body_snippet(response, secrets)}",
            TOOL_ANSWER_INVALID,
        )
    return answer
