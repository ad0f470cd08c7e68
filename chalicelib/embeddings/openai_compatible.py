"""The ``openai`` embedding backend: any OpenAI-compatible ``POST {base_url}/embeddings``.

One request embeds every text (``{"model", "input": [texts]}``); the answer's ``data`` is
put back in input order by its ``index``, and ``usage.prompt_tokens`` is the spend. The
call goes through :mod:`chalicelib.openai_http` (bearer key, outbound client with its
timeouts, retries and address policy, error mapping), as chat completions do.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from chalicelib import openai_http
from chalicelib.embeddings.contract import EmbeddingFailed, EmbeddingResult
from chalicelib.settings import get_settings

NAME = "openai"
DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_MODEL = "text-embedding-3-small"
TIMEOUT_S = 30.0
SOURCE = "the embedding endpoint"


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
            f"{SOURCE}'s answer is not an embeddings list ({where}: {first['msg']})"
        ) from None
    indexes = sorted(item.index for item in answer.data)
    if indexes != list(range(count)):
        raise EmbeddingFailed(f"{SOURCE} answered indexes {indexes[:10]} for {count} input(s)")
    ordered = sorted(answer.data, key=lambda item: item.index)
    return EmbeddingResult(
        vectors=[item.embedding for item in ordered],
        model=answer.model or requested_model,
        input_tokens=answer.usage.prompt_tokens if answer.usage else 0,
    )


class OpenAIEmbeddings:
    """Embeds through an OpenAI-compatible endpoint (``PAWL_EMBEDDING_BASE_URL``)."""

    name = NAME

    def __init__(self, model: str | None = None) -> None:
        settings = get_settings()
        self.model = model or DEFAULT_MODEL
        self.base_url = (settings.embedding_base_url or DEFAULT_BASE_URL).rstrip("/")
        self.api_key_env = settings.embedding_api_key_env

    def embed(self, texts: list[str]) -> EmbeddingResult:
        try:
            key = openai_http.operator_api_key(self.api_key_env, "PAWL_EMBEDDING_API_KEY_ENV")
            data = openai_http.post_json(
                f"{self.base_url}/embeddings",
                embeddings_request(self.model, texts),
                key=key,
                source=SOURCE,
                timeout_s=TIMEOUT_S,
            )
        except openai_http.EndpointFailed as exc:
            raise EmbeddingFailed(exc.message) from None
        return result_from_answer(data, len(texts), self.model)
