"""The ``openai`` embedding backend: any OpenAI-compatible ``POST {base_url}/embeddings``.

One request embeds every text (``{"model", "input": [texts]}``); the answer's ``data`` is
put back in input order by its ``index``, and ``usage.prompt_tokens`` is the spend. The
call goes through :mod:`chalicelib.outbound`, so timeouts, retries and the address policy
(``PAWL_ALLOW_PRIVATE_URLS``) are the same as for every other outbound call.
"""

from __future__ import annotations

import os
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from chalicelib import outbound
from chalicelib.embeddings.contract import EmbeddingFailed, EmbeddingResult
from chalicelib.settings import get_settings

NAME = "openai"
DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_MODEL = "text-embedding-3-small"
TIMEOUT_S = 30.0
#: How much of an unusable answer's body an error message quotes.
SNIPPET_CHARS = 300


class _Embedding(BaseModel):
    model_config = ConfigDict(extra="ignore")

    embedding: list[float] = Field(min_length=1)
    index: int = Field(ge=0)


class _Usage(BaseModel):
    model_config = ConfigDict(extra="ignore")

    prompt_tokens: int = Field(0, ge=0)


class _Answer(BaseModel):
    model_config = ConfigDict(extra="ignore")

    data: list[_Embedding]
    model: str | None = None
    usage: _Usage | None = None


def embeddings_request(model: str, texts: list[str]) -> dict[str, Any]:
    """The request body for one batch."""
    return {"model": model, "input": list(texts)}


def result_from_answer(data: Any, count: int, requested_model: str) -> EmbeddingResult:
    """Read a decoded answer; ``data`` must index every input exactly once."""
    try:
        answer = _Answer.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "(root)"
        raise EmbeddingFailed(
            f"the embedding endpoint's answer is not an embeddings list ({where}: {first['msg']})"
        ) from None
    indexes = sorted(item.index for item in answer.data)
    if indexes != list(range(count)):
        raise EmbeddingFailed(
            f"the embedding endpoint answered indexes {indexes[:10]} for {count} input(s)"
        )
    ordered = sorted(answer.data, key=lambda item: item.index)
    return EmbeddingResult(
        vectors=[item.embedding for item in ordered],
        model=answer.model or requested_model,
        input_tokens=answer.usage.prompt_tokens if answer.usage else 0,
    )


def _snippet(response: outbound.OutboundResponse, secrets: list[str]) -> str:
    text = response.text[:SNIPPET_CHARS]
    for secret in secrets:
        text = text.replace(secret, "***")
    return text


class OpenAIEmbeddings:
    """Embeds through an OpenAI-compatible endpoint (``PAWL_EMBEDDING_BASE_URL``)."""

    name = NAME

    def __init__(self, model: str | None = None) -> None:
        settings = get_settings()
        self.model = model or DEFAULT_MODEL
        self.base_url = (settings.embedding_base_url or DEFAULT_BASE_URL).rstrip("/")
        self.api_key_env = settings.embedding_api_key_env

    def _api_key(self) -> str | None:
        if not self.api_key_env:
            return None
        key = os.environ.get(self.api_key_env)
        if not key:
            raise EmbeddingFailed(
                f"environment variable {self.api_key_env} (PAWL_EMBEDDING_API_KEY_ENV) is not "
                "set in pawl's environment"
            )
        return key

    def embed(self, texts: list[str]) -> EmbeddingResult:
        api_key = self._api_key()
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        secrets = [api_key] if api_key else []
        try:
            response = outbound.post_json(
                f"{self.base_url}/embeddings",
                embeddings_request(self.model, texts),
                headers=headers,
                timeout_s=TIMEOUT_S,
            )
        except outbound.OutboundError as exc:
            raise EmbeddingFailed(f"embedding call failed: {exc}") from None
        if not response.ok:
            raise EmbeddingFailed(
                f"the embedding endpoint answered HTTP {response.status} after "
                f"{response.attempts} attempt(s): {_snippet(response, secrets)}"
            )
        try:
            data = response.json()
        except ValueError:
            raise EmbeddingFailed(
                f"the embedding endpoint answered HTTP {response.status} with a body that is "
                f"not JSON: {_snippet(response, secrets)}"
            ) from None
        return result_from_answer(data, len(texts), self.model)
