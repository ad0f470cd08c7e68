"""A small client for OpenAI-compatible chat completions (LLM judges, deciders, the
``model`` agent).

A call is ``POST {base_url}/chat/completions`` at temperature 0 (graders and evals want
repeatable answers) through :mod:`chalicelib.openai_http` (bearer key from the variable
``api_key_env`` names, outbound client, error mapping). :func:`parse_completion` reads
the answer's first choice and the usage the provider reported; anything unusable is a
:class:`CompletionFailed`, whose message never holds the key.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from chalicelib import openai_http
from chalicelib.openai_http import EndpointFailed

DEFAULT_TIMEOUT_S = 60.0

CompletionFailed = EndpointFailed
"""No usable completion: the call failed, or the answer is not a chat completion."""


@dataclass(frozen=True)
class ChatEndpoint:
    """Where a completion goes: an OpenAI-compatible base URL, a model, and where the key
    comes from: ``secret_key`` (a project secret, opened only when the call is made), else
    the variable ``api_key_env`` names (when the operator lists it)."""

    base_url: str
    model: str
    api_key_env: str | None = None
    secret_key: Callable[[], str] | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S
    #: How error messages name the endpoint, and the setting that names its key variable.
    source: str = "the provider"
    key_setting: str = "the provider's api_key_env"

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
    #: False when the answer held no ``usage`` object (``usage`` is then all zeros).
    usage_reported: bool = False


def request_body(model: str, messages: list[dict[str, Any]], **options: Any) -> dict[str, Any]:
    """A tool-less request at temperature 0; ``options`` add fields (``response_format``...)."""
    return {"model": model, "messages": messages, "temperature": 0, **options}


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


def _first_message(data: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """The first choice and its message; CompletionFailed when the answer has neither."""
    choices = data.get("choices") if isinstance(data, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise CompletionFailed("the answer is not a chat completion (it has no choices)")
    message = choices[0].get("message")
    if not isinstance(message, dict):
        raise CompletionFailed("the answer is not a chat completion (its choice has no message)")
    return choices[0], message


def parse_completion(
    data: Any, requested_model: str, *, content_required: bool = True
) -> Completion:
    """Read a decoded chat-completion answer (first choice; usage when reported).

    Without ``content_required`` a message with no text (a tool call) reads as ``""``.
    """
    choice, message = _first_message(data)
    content = _text(message.get("content"))
    if content is None and content_required:
        raise CompletionFailed("the answer is not a chat completion (its message has no content)")
    raw_usage = data.get("usage")
    usage = CompletionUsage()
    if isinstance(raw_usage, dict):
        usage = CompletionUsage(
            input_tokens=_count(raw_usage.get("prompt_tokens")),
            output_tokens=_count(raw_usage.get("completion_tokens")),
            cost_usd=_cost(raw_usage),
        )
    finish = choice.get("finish_reason")
    return Completion(
        content=content or "",
        model=requested_model,
        usage=usage,
        finish_reason=finish if isinstance(finish, str) else None,
        usage_reported=isinstance(raw_usage, dict),
    )


def post_chat(endpoint: ChatEndpoint, body: dict[str, Any]) -> Any:
    """POST a chat-completions ``body`` to ``endpoint``; the decoded JSON answer."""
    if endpoint.secret_key is not None:
        key: str | None = endpoint.secret_key()
    else:
        key = openai_http.api_key(endpoint.api_key_env, endpoint.key_setting)
    return openai_http.post_json(
        endpoint.url, body, key=key, source=endpoint.source, timeout_s=endpoint.timeout_s
    )


def complete(endpoint: ChatEndpoint, messages: list[dict[str, Any]]) -> Completion:
    """One completion of ``messages``; raises :class:`CompletionFailed` when there is none."""
    body = request_body(endpoint.model, messages, n=1, stream=False)
    return parse_completion(post_chat(endpoint, body), endpoint.model)
