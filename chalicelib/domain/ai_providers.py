"""AI providers: a project's OpenAI-compatible model endpoints (LLM judges run through them).

A provider never holds a key: ``secret_id`` names the project secret whose value is sent
as the key (opened only for the call), or ``api_key_env`` an environment variable the
operator lists in ``PAWL_CREDENTIAL_ENV_ALLOW``.
"""

from __future__ import annotations

from chalicelib.domain.base import Resource


class AiProvider(Resource):
    id: str
    project_id: str
    name: str
    base_url: str
    api_key_env: str | None = None
    secret_id: str | None = None
    default_model: str
    created_at: str
    updated_at: str


class AiProviderSpec(Resource):
    """The writable fields of a provider (what create and update store)."""

    name: str
    base_url: str
    api_key_env: str | None = None
    secret_id: str | None = None
    default_model: str


class JudgeReference(Resource):
    """An eval's ``llm_judge`` scorer and the provider it pins (None: the project default)."""

    eval_id: str
    eval_name: str
    ai_provider_id: str | None = None
