"""One JSON call to an OpenAI-compatible endpoint: what chat completions (LLM judges,
deciders, the ``model`` agent) and the ``openai`` embedding backend share.

The key is a project secret's value or, for a tenant's ``api_key_env``, the environment
variable it names *when the operator listed it* (``PAWL_CREDENTIAL_ENV_ALLOW``, checked
here on every call: a row stored before the list existed, or a name the operator later
removed, sends nothing); it is sent as ``Authorization: Bearer``; the POST goes through
the shared outbound client (timeouts, retries on 429/502/503/504, address policy). Every
failure — the key variable unset or not listed, the endpoint unreachable, a non-2xx
answer, a body that is not JSON — is an :class:`EndpointFailed` whose message never holds the key.
"""

from __future__ import annotations

import os
from typing import Any

from chalicelib import outbound
from chalicelib.settings import CREDENTIAL_ENV_ALLOW, get_settings

SNIPPET_CHARS = 300
"""How much of an unusable answer's body an error message quotes."""


class EndpointFailed(Exception):
    """No usable answer; ``status`` is the HTTP status when the endpoint answered."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


#: The one answer to an ``api_key_env`` the operator did not list, at write and at call
#: time alike: it never says whether the variable exists.
UNLISTED_ENV_MESSAGE = (
    f"api_key_env may only name a variable the operator lists in {CREDENTIAL_ENV_ALLOW}; "
    "store the key as a project secret and reference it with secret_id instead"
)


def is_listed_env(env_name: str) -> bool:
    """True when a tenant's ``api_key_env`` may name ``env_name`` on this deployment."""
    return env_name in get_settings().credential_env_allow


def api_key(env_name: str | None, setting: str) -> str | None:
    """The key in ``$env_name`` (None when no variable is named), provided the operator
    lists the name; ``setting`` says, in the error, where the name was configured."""
    if not env_name:
        return None
    if not is_listed_env(env_name):
        raise EndpointFailed(UNLISTED_ENV_MESSAGE)
    return operator_api_key(env_name, setting)


def operator_api_key(env_name: str | None, setting: str) -> str | None:
    """The key in ``$env_name`` for a name the *operator* configured (the embedding
    backend's ``PAWL_EMBEDDING_API_KEY_ENV``): no tenant can reach this."""
    if not env_name:
        return None
    key = os.environ.get(env_name)
    if not key:
        raise EndpointFailed(
            f"environment variable {env_name} ({setting}) is not set in pawl's environment"
        )
    return key


def snippet(text: str, secret: str | None) -> str:
    """A short, single-line excerpt of an answer body, the key scrubbed if it was echoed."""
    if secret:
        text = text.replace(secret, "***")
    flat = " ".join(text.split())
    if not flat:
        return "(empty body)"
    return flat[:SNIPPET_CHARS] + ("..." if len(flat) > SNIPPET_CHARS else "")


def post_json(
    url: str, body: dict[str, Any], *, key: str | None, source: str, timeout_s: float
) -> Any:
    """POST ``body`` (with ``key`` as the bearer token) and decode the 2xx JSON answer.

    ``source`` names the endpoint in error messages ("the provider").
    """
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    try:
        # A completion or an embedding changes nothing: one the endpoint may have seen
        # can be asked again (outbound.retry).
        response = outbound.post_json(
            url, body, headers=headers, timeout_s=timeout_s, repeatable=True
        )
    except outbound.OutboundError as exc:
        raise EndpointFailed(f"{source} could not be reached: {exc}") from None
    try:
        return outbound.decode_json(response, source, lambda r: snippet(r.text, key))
    except outbound.UnusableAnswer as exc:
        raise EndpointFailed(exc.message, status=exc.status) from None
