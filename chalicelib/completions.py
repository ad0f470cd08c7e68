"""A small client for OpenAI-compatible chat completions (LLM judges, and later deciders).

One call is one tool-less completion at temperature 0 (graders want repeatable answers):
``POST {base_url}/chat/completions`` through the shared outbound client (timeouts,
retries on 429/502/503/504, SSRF policy), ``Authorization: Bearer $<api_key_env>`` when
the endpoint names a key variable. It returns the reply text and the usage the provider
reported; anything else becomes :class:`CompletionFailed`, whose message never holds the
key.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Any

from chalicelib import outbound

SNIPPET_CHARS = 300
DEFAULT_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class ChatEndpoint:
    """Where a completion goes: an OpenAI-compatible base URL, a model, the key's env name."""

    base_url: str
    model: str
    api_key_env: str | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S

    @property
    def url(self) -> str:
        return self.base_url.rstrip("/") + "/chat/completions"


@dataclass(frozen=True)
class CompletionUsage:
    input_tokens: int = 0
    output_tokens: int = 0
    #: What the provider said the call cost (``usage.cost``); 0 when it does not say.
    cost_usd: float = 0.0


@dataclass(frozen=True)
class Completion:
    content: str
    model: str
    usage: CompletionUsage
    finish_reason: str | None = None


class CompletionFailed(Exception):
    """No usable completion: the call failed, or the answer is not a chat completion."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


def request_body(model: str, messages: list[dict[str, Any]]) -> dict[str, Any]:
    """The request: no ``tools``, temperature 0, one choice, no streaming."""
    return {"model": model, "messages": messages, "temperature": 0, "n": 1, "stream": False}


def _api_key(endpoint: ChatEndpoint) -> str | None:
    if not endpoint.api_key_env:
        return None
    key = os.environ.get(endpoint.api_key_env)
    if not key:
        raise CompletionFailed(
            f"environment variable {endpoint.api_key_env} (the provider's api_key_env) "
            "is not set in pawl's environment"
        )
    return key


def _snippet(text: str, secret: str | None) -> str:
    """A short, single-line excerpt of an answer body, with the key scrubbed if echoed."""
    if secret:
        text = text.replace(secret, "***")
    return " ".join(text.split())[:SNIPPET_CHARS]


def _count(value: Any) -> int:
    """A token count as the provider reported it; anything not a count is 0."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return 0
    return max(0, int(value))


def _cost(usage: dict[str, Any]) -> float:
    value = usage.get("cost")
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return 0.0
    return max(0.0, float(value))


def _text(content: Any) -> str | None:
    """The message text: a string, or the text parts of a content-part list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text") for p in content if isinstance(p, dict)]
        texts = [p for p in parts if isinstance(p, str)]
        return "".join(texts) if texts else None
    return None


def parse_completion(data: Any, requested_model: str) -> Completion:
    """Read a decoded chat-completion answer (first choice; usage when reported)."""
    choices = data.get("choices") if isinstance(data, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise CompletionFailed("the provider's answer has no choices")
    message = choices[0].get("message")
    content = _text(message.get("content")) if isinstance(message, dict) else None
    if content is None:
        raise CompletionFailed("the provider's answer has no message content")
    raw_usage = data.get("usage")
    usage = CompletionUsage()
    if isinstance(raw_usage, dict):
        usage = CompletionUsage(
            input_tokens=_count(raw_usage.get("prompt_tokens")),
            output_tokens=_count(raw_usage.get("completion_tokens")),
            cost_usd=_cost(raw_usage),
        )
    finish = choices[0].get("finish_reason")
    return Completion(
        content=content,
        model=requested_model,
        usage=usage,
        finish_reason=finish if isinstance(finish, str) else None,
    )


def complete(endpoint: ChatEndpoint, messages: list[dict[str, Any]]) -> Completion:
    """One completion of ``messages``; raises :class:`CompletionFailed` when there is none."""
    api_key = _api_key(endpoint)
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    body = request_body(endpoint.model, messages)
    try:
        response = outbound.post_json(
            endpoint.url, body, headers=headers, timeout_s=endpoint.timeout_s
        )
    except outbound.OutboundError as exc:
        raise CompletionFailed(f"the provider could not be reached: {exc}") from None
    if not response.ok:
        raise CompletionFailed(
            f"the provider answered HTTP {response.status} after {response.attempts} "
            f"attempt(s): {_snippet(response.text, api_key)}",
            status=response.status,
        )
    try:
        data = response.json()
    except ValueError:
        raise CompletionFailed(
            f"the provider's answer is not JSON: {_snippet(response.text, api_key)}",
            status=response.status,
        ) from None
    return parse_completion(data, endpoint.model)
